/* Starts the linked agent before any CUDA call, as a service would, and reports what it said.
 * Without a GPU or driver the agent stays off (one line on stderr) and the program goes on. */
#include <stdio.h>

#include <cutriage/cutriage.h>

int main(void) {
  const int started = cutriage_start();
  printf("consumer: cutriage %s, started=%d, active=%d\n", cutriage_version(), started, cutriage_active());
  cutriage_finish();
  return 0;
}
