// One look gives one utilisation sample per process, its newest (docs/facts.md), and a
// process's last kernel shows in it for a second or two: a one-shot command that would judge a
// leftover busy on that sample alone looks again (diagnose/activity.h has the rule). The cost
// falls only where a leftover shows a busy sample: nobody else is asked about twice.
#pragma once

#include <map>

#include "collect/gather.h"
#include "diagnose/activity.h"

namespace gpuclean::collect {

// Looks at the GPUs again (Gatherer::query_gpu_view: NVML, no /proc scan) until each of WHO
// has shown a sample taken kSustainedAfterSeconds after GATHERED's look at
// kComputingFloorPercent or more, or kSustainedWaitSeconds passed since it; each GPU's newer
// samples go into GATHERED's view and the first look, with the highest figure seen after it,
// into its busy_looks for WHO, to be diagnosed again (diagnose::assign_activity judges them). WHO
// empty, or no GPU view: nothing is asked, no time spent. A look that gets no answer ends the wait
// (what was not seen again is not sustained). Returns whether it looked again.
bool settle_activity(Gatherer& gatherer, Gathered& gathered,
                     const std::map<diagnose::ProcessIdentity, diagnose::BusyLook>& who);

// settle_activity for the leftovers status judges: the holders of its leftover problems whose
// owner may live (an orphan and the members of its tree) that show a busy sample not known to
// be sustained (diagnose::activity_to_settle).
bool settle_leftover_activity(Gatherer& gatherer, Gathered& gathered);

}  // namespace gpuclean::collect
