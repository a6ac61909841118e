/* The library of dlopen_init_crash: its constructor reads through NULL. */
int *volatile plugin_config;

__attribute__((constructor)) static void plugin_init(void) { plugin_config[0] = 1; }
