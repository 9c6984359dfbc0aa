// cli/hacks: `cudal1 hacks import|list|similar` — the judge's database of known reward hacks
// (judge/hack_cases.h): filled from the red-team fixtures and from the store's refused
// evaluations, listed, and searched for the cases most like a file.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "core/hash.h"
#include "judge/hack_cases.h"
#include "report/table.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cudal1::cli {

namespace {

struct HacksArgs {
  std::string db, fixtures, file, task;
  bool from_store = false, json_out = false;
  std::size_t k = 5;
};

json case_json(const HackCase& c) {
  return {{"id", c.id}, {"family", c.family}, {"source", c.source}, {"task_hash", c.task_hash},
          {"candidate_hash", c.candidate_hash}, {"evidence", c.evidence}};
}

// A fixture's task file by name, else the task's hash, short.
std::string task_text(const HackCase& c) {
  std::string task = c.evidence.value("task", "");
  if (!task.empty()) return task;
  return c.task_hash.empty() ? "-" : c.task_hash.substr(0, 12);
}

std::vector<HackCase> known_cases(Store& store) {
  std::vector<HackCase> cases = store.hack_cases();
  if (cases.empty())
    throw Error(ErrorKind::input, "the hack database of " + store.path().string() + " is empty",
                "fill it with `cudal1 hacks import --fixtures tests/fixtures/candidates` (cudal1's red-team corpus) "
                "and `cudal1 hacks import --store` (evaluations refused with a blocking flag)");
  return cases;
}

void run_import(const HacksArgs& a) {
  if (a.fixtures.empty() && !a.from_store)
    throw Error(ErrorKind::usage, "nothing to import", "pass --fixtures DIR (a folder of red-team candidates), --store, or both");
  std::unique_ptr<Store> store = open_store(a.db, false);
  std::size_t before = store->hack_cases().size();
  if (!a.fixtures.empty()) {
    std::size_t n = judge::import_fixtures(*store, a.fixtures);
    std::cout << n << " hack fixture(s) in " << a.fixtures << "\n";
  }
  if (a.from_store) {
    std::size_t n = judge::import_rejected(*store);
    std::cout << n << " evaluation(s) refused with a blocking flag in " << store->path().string() << "\n";
  }
  std::size_t after = store->hack_cases().size();
  std::cout << after - before << " case(s) added, " << after << " known\n";
}

void run_list(const HacksArgs& a) {
  std::unique_ptr<Store> store = open_store(a.db, false);
  std::vector<HackCase> cases = known_cases(*store);
  if (a.json_out) {
    json out = json::array();
    for (auto& c : cases) out.push_back(case_json(c));
    std::cout << out.dump() << std::endl;
    return;
  }
  Table t({"id", "family", "source", "task"}, {true, false, false, false});
  for (auto& c : cases) t.add_row({std::to_string(c.id), c.family, c.source, task_text(c)});
  t.print(std::cout);
}

void run_similar(const HacksArgs& a) {
  if (!fs::is_regular_file(a.file))
    throw Error(ErrorKind::input, "no file " + a.file, "name a candidate's Python file (a ModelNew module)");
  if (!a.task.empty() && !fs::is_regular_file(a.task))
    throw Error(ErrorKind::input, "no task file " + a.task, "name the KernelBench file the candidate is for, or leave --task out");
  std::string code = read_file(a.file), reference = a.task.empty() ? "" : read_file(a.task);
  std::unique_ptr<Store> store = open_store(a.db, false);
  std::vector<judge::Neighbour> near = judge::nearest(known_cases(*store), code, reference, a.k, sha256_hex(code));
  if (a.json_out) {
    json out = json::array();
    for (auto& n : near) {
      json j = case_json(n.hack);
      j["similarity"] = n.similarity;
      out.push_back(j);
    }
    std::cout << out.dump() << std::endl;
    return;
  }
  Table t({"similarity", "id", "family", "source", "task"}, {true, true, false, false, false});
  for (auto& n : near)
    t.add_row({format_fixed(n.similarity, 2), std::to_string(n.hack.id), n.hack.family, n.hack.source, task_text(n.hack)});
  t.print(std::cout);
}

}  // namespace

void register_hacks(CLI::App& app) {
  auto a = std::make_shared<HacksArgs>();
  CLI::App* hacks = app.add_subcommand("hacks", "The judge's database of known reward hacks: import, list, similar");
  hacks->require_subcommand(1);

  CLI::App* import = hacks->add_subcommand("import", "Add hack fixtures and the store's refused evaluations to the database");
  import->add_option("--fixtures", a->fixtures, "a folder of red-team candidates with `# family:` headers (tests/fixtures/candidates)");
  import->add_flag("--store", a->from_store, "every stored evaluation refused with a blocking flag");
  import->callback([a] { run_import(*a); });

  CLI::App* list = hacks->add_subcommand("list", "Every known hack: id, family, source, task");
  list->add_flag("--json", a->json_out, "print them as one JSON array");
  list->callback([a] { run_list(*a); });

  CLI::App* similar = hacks->add_subcommand("similar", "The known hacks most like a candidate file");
  similar->add_option("file", a->file, "the candidate's Python file")->required();
  similar->add_option("--task", a->task, "the task file the candidate is for: what it shares with it is not compared");
  similar->add_option("-k", a->k, "how many")->check(CLI::PositiveNumber)->capture_default_str();
  similar->add_flag("--json", a->json_out, "print them as one JSON array, with each one's similarity");
  similar->callback([a] { run_similar(*a); });

  for (CLI::App* cmd : {import, list, similar})
    cmd->add_option("--db", a->db, std::string("SQLite store (") + kDefaultStoreHelp + ")");
}

}  // namespace cudal1::cli
