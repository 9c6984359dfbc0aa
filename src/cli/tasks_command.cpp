#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "core/paths.h"
#include "report/table.h"
#include "runner/python.h"
#include "store/store.h"
#include "core/error.h"
#include "tasks/speed_of_light.h"
#include "tasks/suite.h"

namespace cudal1::cli {

namespace {

struct TasksArgs {
  std::string suite, db, python, name, device;
  bool json_out = false, no_store = false, eager = false;
};

// Metadata of `tasks`; with --device, speed-of-light figures too (and eager times with --eager).
nlohmann::json describe(const TasksArgs& a, const std::vector<TaskEntry>& tasks) {
  std::unique_ptr<Store> store = open_store(a.db, a.no_store);
  bool tty = isatty(2) && !a.json_out;
  auto progress = [&](const char* what) {
    return [tty, what](std::size_t done, std::size_t total) {
      if (!tty) return;
      std::fprintf(stderr, "\r\033[K[%s] %zu/%zu", what, done, total);
      if (done == total) std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    };
  };
  std::string python = find_python(a.python);
  nlohmann::json metas = describe_tasks(tasks, store.get(), python, progress("describing tasks"));
  if (a.eager && a.device.empty())
    throw Error(ErrorKind::usage, "--eager needs --device", "add --device cpu or --device cuda");
  if (!a.device.empty())
    add_speed_of_light(metas, a.device, a.eager, store.get(), python, progress(a.eager ? "timing eager" : "ceilings"));
  return metas;
}

void run_list(const TasksArgs& a) {
  auto suite = a.suite.empty() ? default_suite_dir() : std::filesystem::path(a.suite);
  nlohmann::json metas = describe(a, discover_tasks(suite));
  if (a.json_out) {
    std::cout << metas.dump() << std::endl;
    return;
  }
  bool sol = !a.device.empty();
  std::vector<std::string> headers = {"name", "level", "GFLOP", "MB moved", "FLOP/byte", "dtypes"};
  if (sol) headers.push_back("SOL ms");
  if (a.eager) headers.insert(headers.end(), {"eager ms", "SOL/eager"});
  headers.push_back("what");
  std::vector<bool> right = {false, true, true, true, true, false, true, true, true};
  Table t(headers, right);
  for (auto& m : metas) {
    double flops = m.value("flops", 0.0), bytes = m.value("bytes", 0.0);
    std::string dtypes;
    for (auto& d : m.value("float_dtypes", nlohmann::json::array())) dtypes += (dtypes.empty() ? "" : ",") + d.get<std::string>();
    std::vector<std::string> row = {m["name"], std::to_string(m.value("level", 0)), format_fixed(flops / 1e9, 3),
                                    format_fixed(bytes / 1e6, 1), bytes > 0 ? format_fixed(flops / bytes, 1) : "-", dtypes};
    if (sol) row.push_back(format_fixed(m.value("sol_ms", 0.0), 4));
    if (a.eager)
      row.insert(row.end(), {format_fixed(m.value("eager_ms", 0.0), 4), format_fixed(100 * m.value("sol_fraction", 0.0), 1) + "%"});
    row.push_back(m.value("doc", "").substr(0, 50));
    t.add_row(row);
  }
  t.print(std::cout);
  std::cout << metas.size() << " tasks in " << suite.string() << "\n";
}

void run_show(const TasksArgs& a) {
  auto suite = a.suite.empty() ? default_suite_dir() : std::filesystem::path(a.suite);
  nlohmann::json m = describe(a, {find_task(suite, a.name)})[0];
  if (a.json_out) {
    std::cout << m.dump() << std::endl;
    return;
  }
  std::cout << "task       " << m["name"].get<std::string>() << " (level " << m.value("level", 0) << ")\n"
            << "file       " << m["path"].get<std::string>() << "\n"
            << "what       " << m.value("doc", "") << "\n"
            << "FLOPs      " << m.value("flops", 0.0) / 1e9 << " G  (" << m.value("flop_counter", "") << ")\n"
            << "bytes      " << m.value("bytes", 0.0) / 1e6 << " MB: inputs, parameters and outputs, each once\n";
  for (auto& i : m.value("inputs", nlohmann::json::array())) std::cout << "input      " << i.dump() << "\n";
  for (auto& o : m.value("outputs", nlohmann::json::array())) std::cout << "output     " << o.dump() << "\n";
  std::cout << "parameters " << m.value("parameters", 0) << "\n";
}

}  // namespace

void register_tasks(CLI::App& app) {
  auto args = std::make_shared<TasksArgs>();
  auto* cmd = app.add_subcommand("tasks", "The bundled task suite: list tasks with computed FLOPs and bytes");
  cmd->require_subcommand(1);
  auto common = [&](CLI::App* sub) {
    sub->add_option("--suite", args->suite, "suite folder (default: $CUDAL1_TASKS_DIR or the bundled tasks/)");
    sub->add_flag("--json", args->json_out, "print JSON on stdout");
    sub->add_option("--db", args->db, "SQLite store caching the metadata (default as for eval)");
    sub->add_flag("--no-store", args->no_store, "compute without reading or writing the store");
    sub->add_option("--python", args->python, "Python interpreter with torch");
    sub->add_option("--device", args->device, "also give speed-of-light times for this device (cpu, cuda, cuda:N)")->transform(device_names());
    sub->add_flag("--eager", args->eager, "with --device: time each task's eager Model and give SOL/eager");
  };
  auto* list = cmd->add_subcommand("list", "every task: name, level, FLOPs, minimum bytes moved");
  common(list);
  list->callback([args] { run_list(*args); });
  auto* show = cmd->add_subcommand("show", "one task in detail");
  common(show);
  show->add_option("name", args->name, "a task file, or a suite name (level1/28_log_softmax, 28_log_softmax or log_softmax), or a part of a name that only one task has")->required();
  show->callback([args] { run_show(*args); });
}

}  // namespace cudal1::cli
