// STUB (engine owner replaces).
#include "cutriage/triage/engine.h"
namespace cutriage::triage {
Diagnosis triage_kernel(const KernelInput&, const TriageOptions&) { return {}; }
}  // namespace cutriage::triage
