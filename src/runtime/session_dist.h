// Which world of ranks a session joins (docs/DISTRIBUTED.md).
#pragma once
#include <memory>

#include "config/run_config.h"
#include "dist/communicator.h"

namespace trt {

// dist.backend resolved against the launcher's environment: null for a world of one, else
// this process's place in the MPI world (auto: MPI when the launcher started several ranks).
std::shared_ptr<dist::Communicator> launcher_world(const DistConfig& d);

// Whether any rank says yes (every rank calls it at the same point).
bool any_rank(dist::Communicator& world, bool mine);

}  // namespace trt
