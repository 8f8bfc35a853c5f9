// 128-bit integer arithmetic for exact counts whose intermediate products may exceed 64 bits
// (e.g. layers × experts × d × width for absurd inputs), narrowed to int64 with a clear error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mosaic {

__extension__ using WideInt = __int128;

// Decimal text of `value`.
std::string WideToString(WideInt value);

// `value` as int64_t. Throws InputError "<what> = <value> does not fit in 64 bits (the model is too
// large to count exactly)" when it is outside the int64_t range.
int64_t NarrowToInt64(WideInt value, std::string_view what);

}  // namespace mosaic
