// STUB (engine owner replaces).
#include "cutriage/triage/engine.h"
namespace cutriage::triage {
void add_derived_metrics(MetricSet&) {}
}  // namespace cutriage::triage
