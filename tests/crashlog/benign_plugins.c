/* The plugins benign.c loads through its DT_RUNPATH ($ORIGIN/plugins), one
 * source, two objects:
 *   libbenign_plugin.so           answers 42 (row 9: the program, not a
 *                                 library in front of dlopen, is the caller)
 *   libbenign_crashlog_plugin.so  carries libcoroner_crashlog.a and installs
 *                                 it (row 11: dlclose'd afterwards) */
#ifdef CRASHLOG_PLUGIN
#include "coroner/crashlog.h"

int plugin_install(const char* log) {
  coroner_crashlog_options o = {-1, log};
  return coroner_crashlog_install(&o);
}
#else
int benign_plugin_answer(void) { return 42; }
#endif
