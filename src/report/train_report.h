// report/train_report.h — the HTML page of `cudal1 train`: each stage's OUT/train_log.jsonl (one
// JSON object per optimiser step, written by the trainer's stages) as a summary table and curves
// per step, stages in the order given (sft, selfsup, crl) so the rise from stage to stage shows.
// Log lines are input: every string from them, and the folders' names, is escaped.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudal1 {

struct TrainLog {
  std::string stage;                   // the lines' "stage"; "sft" when they have none (older logs)
  std::filesystem::path dir;           // the stage's OUT folder
  std::vector<nlohmann::json> steps;   // one object per logged step, in file order
  bool cut_short = false;              // the last line was cut mid-write (a crash) and is left out
};

// Reads OUT/train_log.jsonl. A missing file, or a line before the last that is not a JSON
// object, is an Error(input) naming the file (and line); a broken last line is what a crash
// mid-write leaves, so it is skipped and `cut_short` set.
TrainLog load_train_log(const std::filesystem::path& out_dir);

// One self-contained page over every stage: a summary table (steps, time, first and last loss;
// for the stages that sample: first, last and mean correct rate and raw reward, mean KL and clip
// fraction), each stage's curves per step (loss, rewards with a ±std band, correct rate, KL, clip
// fraction, gradient norm, learning rate: those its log has), and with two or more sampling
// stages, their correct rate and raw reward end to end on one step axis.
std::string train_report_html(const std::vector<TrainLog>& stages);

}  // namespace cudal1
