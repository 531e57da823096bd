// The header compiles as C++20 with -Wall -Wextra -Werror, its layouts match the Rust
// side, and the types are usable as plain C++ aggregates.
#include <cstdio>
#include <type_traits>

#include "ffi_layout.h"

static_assert(std::is_trivially_copyable_v<MmoMoveRecord>);
static_assert(std::is_standard_layout_v<MmoMoveEvent>);
static_assert(std::is_trivially_copyable_v<MmoEconomyOp>);
static_assert(alignof(MmoMoveRecord) == 8 && alignof(MmoRaidSpawnRequest) == 4);
static_assert(std::is_same_v<MmoStatus, uint32_t>);

int main() {
    if (mmo_abi_check(MMO_ABI_VERSION) != MMO_OK) {
        return 1;
    }
    MmoConfig config{};
    if (mmo_config_default(&config) != MMO_OK) {
        return 1;
    }
    MmoEngine* engine = nullptr;
    config.player_capacity = 16;
    if (mmo_engine_new(&config, &engine) != MMO_OK) {
        return 1;
    }
    MmoStats stats{};
    if (mmo_stats(engine, &stats) != MMO_OK || stats.joins != 0) {
        return 1;
    }
    mmo_engine_free(engine);
    std::puts("ffi_header_cpp: ok");
    return 0;
}
