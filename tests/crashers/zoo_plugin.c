/* The dlopen'd library of dlopen_crash: reads a field 16 bytes into a NULL
 * struct pointer. */
struct plugin_state {
  long a, b, c;
};

struct plugin_state *volatile plugin_state_ptr;

__attribute__((noinline)) long plugin_step(struct plugin_state *s) { return s->c; }

int plugin_run(void) { return (int)plugin_step(plugin_state_ptr); }
