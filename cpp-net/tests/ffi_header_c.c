/* The header compiles as C11 with -Wall -Wextra -Werror -pedantic, its layouts match the
 * Rust side, and the library links and answers from C. */
#include <stdio.h>
#include <string.h>

#include "ffi_layout.h"

int main(void) {
    if (mmo_abi_check(MMO_ABI_VERSION) != MMO_OK) {
        fprintf(stderr, "ABI mismatch: library %u, header %u\n", mmo_abi_version(), MMO_ABI_VERSION);
        return 1;
    }
    if (mmo_abi_check(MMO_ABI_VERSION + 1) != MMO_ERR_ABI_MISMATCH) {
        return 1;
    }
    MmoConfig config;
    if (mmo_config_default(&config) != MMO_OK || config.aoi_k == 0) {
        return 1;
    }
    if (strcmp(mmo_status_name(MMO_ERR_BUFFER_TOO_SMALL), "MMO_ERR_BUFFER_TOO_SMALL") != 0) {
        return 1;
    }
    MmoEngine *engine = NULL;
    config.player_capacity = 16;
    if (mmo_engine_new(&config, &engine) != MMO_OK || engine == NULL) {
        return 1;
    }
    MmoJoinTicket ticket;
    if (mmo_join(engine, 0, 10.0f, 10.0f, 1, &ticket) != MMO_OK || ticket.player_id == 0) {
        return 1;
    }
    mmo_engine_free(engine);
    puts("ffi_header_c: ok");
    return 0;
}
