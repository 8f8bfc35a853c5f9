#!/usr/bin/env bash
# Installs mosaic's build and test dependencies from Debian 12 packages. Works as root or, for a
# user with sudo, through sudo.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config
  libfmt-dev libtomlplusplus-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libceres-dev libeigen3-dev libmuparser-dev libre2-dev
  clang-16 libclang-rt-16-dev
  chromium libopenmpi-dev openmpi-bin
  pybind11-dev python3-dev python3-numpy python3-pandas python3-pytest python3-setuptools
  python3-pip python3-venv
)
as_root=()
if [ "$(id -u)" -ne 0 ]; then as_root=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}"
