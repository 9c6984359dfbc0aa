// task_facts/store_task_facts.h — the evaluator's TaskFacts (evaluator/task_facts.h) from the
// degenerate-task lint (lint/lint.h), the baselines (baselines/baselines.h) and the speed of light
// (tasks/task_speed_of_light.h), cached in the results store: this layer sits above all of them,
// so the evaluator needs none.
//
// Defines store_task_facts(store): facts kept in `store`'s cache, each computed once per task,
// device and protocol; with a null store, computed every time they are asked for. The best
// accepted speedup is read from `store`'s verdicts; a null store knows none.
#pragma once

#include <memory>

#include "evaluator/task_facts.h"

namespace cudal1 {

class Store;

// `store` must outlive the returned object; null: nothing cached.
std::shared_ptr<TaskFacts> store_task_facts(Store* store);

}  // namespace cudal1
