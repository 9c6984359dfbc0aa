#include "queue/evaluation_engine.h"

namespace cudal1 {

namespace {

class RealPreparedRun : public PreparedRun {
 public:
  explicit RealPreparedRun(PreparedPtr prepared) : prepared_(std::move(prepared)) {}
  EvalResult run() override { return run_evaluation(*prepared_); }

 private:
  PreparedPtr prepared_;
};

class RealEvaluationEngine : public EvaluationEngine {
 public:
  std::unique_ptr<PreparedRun> prepare(const EvalOptions& options) override {
    return std::make_unique<RealPreparedRun>(prepare_evaluation(options));
  }
};

}  // namespace

std::shared_ptr<EvaluationEngine> real_evaluation_engine() {
  static const std::shared_ptr<EvaluationEngine> engine = std::make_shared<RealEvaluationEngine>();
  return engine;
}

}  // namespace cudal1
