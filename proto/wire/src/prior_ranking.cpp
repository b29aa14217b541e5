#include "cutriage/wire/prior_ranking.h"

#include <map>
#include <unordered_map>

#include "cutriage/wire/schema.h"
#include "pbf_read.h"

namespace cutriage::wire {
namespace {

using pbf::f64;
using pbf::message;
using pbf::read_dim3;
using pbf::text;
using pbf::u32;
using pbf::u64;

struct RawFamily {
  uint64_t mangled = 0;
  uint32_t device = 0;
  triage::Dim3 block{0, 0, 0};
};

struct RawStats {
  uint64_t family = 0;
  uint64_t launches = 0;
  uint64_t replayed = 0;
  uint64_t application = 0;
  double total_ns = 0;
  double share = 0;
};

RawFamily read_family(protozero::pbf_reader m, uint64_t* id) {
  using F = schema::KernelFamily;
  RawFamily f;
  while (m.next()) {
    switch (m.tag()) {
      case F::kId: *id = u64(m); break;
      case F::kMangledNameIid: f.mangled = u64(m); break;
      case F::kDevice: f.device = u32(m); break;
      case F::kBlock: f.block = read_dim3(message(m)); break;
      default: m.skip();
    }
  }
  return f;
}

// The families of one trace summary, in its order (most GPU time first).
std::vector<RawStats> read_summary(protozero::pbf_reader m) {
  using TS = schema::TraceSummary;
  using FS = schema::FamilyStats;
  std::vector<RawStats> out;
  while (m.next()) {
    if (m.tag() != TS::kFamilies) {
      m.skip();
      continue;
    }
    protozero::pbf_reader s = message(m);
    RawStats r;
    while (s.next()) {
      switch (s.tag()) {
        case FS::kFamilyId: r.family = u64(s); break;
        case FS::kLaunches: r.launches = u64(s); break;
        case FS::kReplayedLaunches: r.replayed = u64(s); break;
        case FS::kApplicationLaunches: r.application = u64(s); break;
        case FS::kTotalNs: r.total_ns = f64(s); break;
        case FS::kTimeShare: r.share = f64(s); break;
        default: s.skip();
      }
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace

std::optional<PriorRanking> parse_prior_ranking(std::string_view bytes, std::string* error) {
  PriorRanking ranking;
  std::unordered_map<uint64_t, std::string> strings;
  std::map<uint64_t, RawFamily> families;  // KernelFamily.id -> its definition
  std::optional<std::vector<RawStats>> summary;  // the last one read
  const auto on_session = [&](protozero::pbf_reader s) {
    using H = schema::SessionHeader;
    while (s.next()) {
      switch (s.tag()) {
        case H::kPid: ranking.pid = u64(s); break;
        case H::kStartTimeUnixNs: ranking.start_unix_ns = u64(s); break;
        case H::kMode: ranking.mode = text(s); break;
        default: s.skip();
      }
    }
  };
  const auto on_field = [&](protozero::pbf_reader& record) {
    switch (record.tag()) {
      case schema::Record::kInterned: pbf::read_interned(message(record), strings); break;
      case schema::Record::kFamily: {
        uint64_t id = 0;
        RawFamily f = read_family(message(record), &id);
        if (id != 0) families[id] = f;
        break;
      }
      case schema::Record::kTraceSummary: summary = read_summary(message(record)); break;
      default: record.skip();
    }
  };
  // A half-written last record: what came before it stands (a summary is written whole).
  if (!pbf::for_each_record(bytes, on_session, on_field, &ranking.truncated, error)) return std::nullopt;
  if (!summary) {
    if (error) *error = "the file has no trace summary (its run had no trace, or did not end)";
    return std::nullopt;
  }
  for (const RawStats& s : *summary) {
    auto f = families.find(s.family);
    if (f == families.end()) continue;
    auto name = strings.find(f->second.mangled);
    if (name == strings.end() || name->second.empty()) continue;  // cannot be matched by name
    RankedFamily r;
    r.mangled_name = name->second;
    r.device = f->second.device;
    r.block = f->second.block;
    r.rank = static_cast<uint32_t>(ranking.families.size() + 1);
    if (s.application > 0) {
      r.launches = s.application;
    } else {
      r.launches = s.launches >= s.replayed ? s.launches - s.replayed : 0;
      r.launches_approximate = true;
    }
    r.total_ns = s.total_ns;
    r.time_share = s.share;
    ranking.families.push_back(std::move(r));
  }
  return ranking;
}

}  // namespace cutriage::wire
