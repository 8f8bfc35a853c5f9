"""Packages python/mosaic with the extension CMake built (see pyproject.toml)."""

import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("MOSAIC_BUILD_DIR", os.path.join(HERE, "..", "build"))


class BuildWithExtension(build_py):
    def run(self):
        super().run()
        built = glob.glob(os.path.join(BUILD, "python", "mosaic", "_mosaic*.so"))
        if not built:
            raise SystemExit(f"no mosaic extension in {BUILD}/python/mosaic: run "
                             "`cmake --preset default && cmake --build --preset default` first "
                             "(or set MOSAIC_BUILD_DIR)")
        target = os.path.join(self.build_lib, "mosaic")
        os.makedirs(target, exist_ok=True)
        shutil.copy2(built[0], target)


class PlatformDistribution(Distribution):
    """The wheel holds a compiled extension: platform-specific."""

    def has_ext_modules(self):
        return True


setup(packages=["mosaic"], cmdclass={"build_py": BuildWithExtension},
      distclass=PlatformDistribution)
