#include "family.h"

#include <algorithm>
#include <array>

#include "cutriage/triage/library.h"
#include "cutriage/triage/plan.h"
#include "cutriage/base/demangle.h"

namespace cutriage::agent {

wire::FamilyDef Family::definition() const {
  wire::FamilyDef f;
  f.id = family_id;
  f.mangled_name = mangled;
  f.display_name = names->function;
  f.device = device;
  f.block = block;
  return f;
}

void Family::note_rejected(const std::string& name) {
  if (std::find(rejected.begin(), rejected.end(), name) == rejected.end()) rejected.push_back(name);
}

void Family::clear_stage() {
  ao_stage.clear();
  ao_stage_launches.clear();
  ao_stage_pass_ns.clear();
  ao_stage_first_cost.reset();
  ao_stage_id = 0;
  ao_stage_pass_begun_ns = 0;
  stage_open_until_ns.store(0, std::memory_order_relaxed);
}

bool Family::reconcile_stage_pass(uint64_t collection, uint32_t index) {
  ao_stage_pass_begun_ns = 0;
  // The family gave this stage up while the pass ran (another thread found it lost): the pass is
  // of a collection nobody continues (the next stage has another id, so CUPTI starts over).
  if (ao_stage_id == 0 || ao_stage_id != collection) return false;
  if (index < ao_stage_launches.size()) {
    // CUPTI started the collection over (its object was released between two passes, after the
    // selection saw it intact): the passes before are lost; this one is the new collection's.
    const size_t lost = ao_stage_launches.size() - index;
    ao_stage_launches.erase(ao_stage_launches.begin(), ao_stage_launches.begin() + static_cast<std::ptrdiff_t>(lost));
    ao_stage_pass_ns.erase(ao_stage_pass_ns.begin(),
                           ao_stage_pass_ns.begin() + static_cast<std::ptrdiff_t>(std::min(lost, ao_stage_pass_ns.size())));
    ++ao_stages_abandoned;
    if (ao_stage_launches.empty()) ao_stage_first_cost.reset();  // this pass is the first now
  }
  return true;
}

void Family::update_completeness() {
  uncollected = triage::counters_still_needed(*diagnosis, measured, {attempted.begin(), attempted.end()});
  if (uncollected.empty()) complete = true;
  const bool classified = diagnosis->classification != triage::Classification::kInconclusive &&
                          diagnosis->classification != triage::Classification::kUnspecified;
  routed = classified &&
           (complete || triage::verdict_routed(*diagnosis, measured, {attempted.begin(), attempted.end()}));
}

FamilyTable::FamilyTable(uint64_t instance_id, const KernelFilter& kernel_filter)
    : instance_id_(instance_id), kernel_filter_(kernel_filter) {}

Family* FamilyTable::for_launch(const collectors::LaunchEvent& event) {
  // A few recent families per thread: an application launches the same kernels over and over
  // from one thread, so most launches are answered here without a lock.
  struct Entry {
    uint64_t table = 0;
    const char* name = nullptr;
    uint32_t device = 0;
    triage::Dim3 block;
    Family* family = nullptr;
  };
  thread_local std::array<Entry, 8> cache{};
  thread_local size_t next = 0;
  const triage::Dim3 block = event.launch ? event.launch->block : triage::Dim3{0, 0, 0};
  for (const Entry& e : cache) {
    if (e.table == instance_id_ && e.name == event.mangled_name.data() && e.device == event.device &&
        e.block == block && e.family->mangled == event.mangled_name) {
      return e.family;
    }
  }
  Family* family = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    family = find_or_create_locked(event.mangled_name, event.device, block);
  }
  cache[next] = Entry{instance_id_, event.mangled_name.data(), event.device, block, family};
  next = (next + 1) % cache.size();
  return family;
}

Family* FamilyTable::find_or_create_locked(std::string_view mangled, uint32_t device, const triage::Dim3& block) {
  std::unique_ptr<Family>& f = by_key_[std::make_tuple(std::string(mangled), device, block.x, block.y, block.z)];
  if (f) return f.get();
  auto it = names_.find(mangled);
  if (it == names_.end()) {
    auto names = std::make_shared<NameInfo>();
    names->demangled = tools::demangle(std::string(mangled));
    names->function = tools::function_base_name(names->demangled);
    names->matches_filter = kernel_filter_.matches(mangled, names->demangled, names->function);
    names->no_replay = triage::is_communication_kernel(names->function);
    it = names_.emplace(std::string(mangled), std::move(names)).first;
  }
  f = std::make_unique<Family>();
  f->mangled = std::string(mangled);
  f->device = device;
  f->block = block;
  f->names = it->second;
  f->stats.mangled_name = f->mangled;
  families_.push_back(f.get());
  f->family_id = families_.size();
  if (on_create_) on_create_(*f);
  return f.get();
}

Family* FamilyTable::by_id_locked(uint64_t id) const {
  return id == 0 || id > families_.size() ? nullptr : families_[id - 1];
}

}  // namespace cutriage::agent
