// The umbrella header compiles on its own and exposes the API.
#include "mosaic/mosaic.h"

#include <gtest/gtest.h>

namespace mosaic {
namespace {

TEST(Umbrella, ExposesTheLibrary) {
  EXPECT_EQ(CountParams(LoadModel("mixtral-8x7b").config).total_params, 46'702'792'704);
}

}  // namespace
}  // namespace mosaic
