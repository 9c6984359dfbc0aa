// Tests of trainer/safetensors.h: round trips of every dtype, Python-written files, and the
// errors a truncated or corrupted file gives.
#include "trainer/safetensors.h"

#include "core/hash.h"
#include "trainer/test_support.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace cudal1::trainer {
namespace {

using test::expect_error;
using test::ScratchFolder;

std::map<std::string, torch::Tensor> every_dtype() {
  torch::manual_seed(7);
  std::map<std::string, torch::Tensor> t;
  t["f32"] = torch::randn({3, 5});
  t["f16"] = torch::randn({4, 2}).to(torch::kFloat16);
  t["bf16"] = torch::randn({7}).to(torch::kBFloat16);
  t["f64"] = torch::randn({2, 2, 2}, torch::kFloat64);
  t["i64"] = torch::randint(-1000000000000LL, 1000000000000LL, {5}, torch::kInt64);
  t["i32"] = torch::randint(-100000, 100000, {3, 1}, torch::kInt32);
  t["i16"] = torch::randint(-30000, 30000, {3}, torch::kInt16);
  t["i8"] = torch::randint(-128, 127, {9}, torch::kInt8);
  t["u8"] = torch::randint(0, 255, {3, 3}, torch::kUInt8);
  t["bool"] = torch::rand({5}) > 0.5;
  t["scalar"] = torch::tensor(3.5);
  t["empty"] = torch::empty({0, 3});
  t["transposed"] = torch::arange(12, torch::kFloat32).view({3, 4}).t();  // written contiguous
  return t;
}

// A file with a hand-written header and `data` bytes.
void write_raw(const std::filesystem::path& path, const std::string& header, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << header << data;
}

TEST(Safetensors, RoundTripsEveryDtype) {
  ScratchFolder dir;
  auto tensors = every_dtype();
  save_safetensors(dir / "t.safetensors", tensors, {{"format", "pt"}, {"note", "hello"}});
  auto file = SafetensorsFile::open(dir / "t.safetensors");
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"note", "hello"}}));
  ASSERT_EQ(file.names().size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    for (bool copy : {false, true}) {
      auto got = file.get(name, copy);
      EXPECT_EQ(got.scalar_type(), t.scalar_type());
      EXPECT_EQ(got.sizes(), t.sizes());
      EXPECT_TRUE(torch::equal(got, t));
    }
  }
  EXPECT_EQ(file.entries().at("bf16").dtype, "BF16");
  EXPECT_EQ(file.entries().at("bool").dtype, "BOOL");

  // Header padded to 8 bytes; data laid out in key order, each tensor 8-aligned in the file here.
  std::string bytes = read_file(dir / "t.safetensors");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(header_len % 8, 0u);
  EXPECT_EQ(bytes[8 + header_len - 1] == ' ' || bytes[8 + header_len - 1] == '}', true);
  uint64_t prev_end = 0;
  for (const auto& [name, e] : file.entries()) {  // sorted by name
    EXPECT_EQ(e.begin, prev_end) << name;
    prev_end = e.end;
  }
}

TEST(Safetensors, ViewsKeepTheMappingAliveAndNeverWriteTheFile) {
  ScratchFolder dir;
  save_safetensors(dir / "t.safetensors", {{"x", torch::ones({4})}});
  torch::Tensor view;
  {
    auto file = SafetensorsFile::open(dir / "t.safetensors");
    view = file.get("x");
  }  // the file object is gone; the view still holds the mapping
  EXPECT_TRUE(torch::equal(view, torch::ones({4})));
  view.mul_(3);  // copy-on-write: the process sees it, the file does not
  EXPECT_TRUE(torch::equal(view, torch::full({4}, 3.0)));
  EXPECT_TRUE(torch::equal(SafetensorsFile::open(dir / "t.safetensors").get("x"), torch::ones({4})));
}

TEST(Safetensors, ReadsWhatPythonWrote) {
  auto file = SafetensorsFile::open(test::fixture("llama") / "expected.safetensors");
  EXPECT_NE(file.metadata().at("versions").find("transformers=4.57.1"), std::string::npos);
  auto ids = file.get("input_ids");
  EXPECT_EQ(ids.scalar_type(), torch::kInt64);
  EXPECT_EQ(ids.sizes(), (std::vector<int64_t>{3, 12}));
  EXPECT_EQ(file.get("loss").dim(), 0);
  // The bf16 weights Hugging Face saved.
  auto weights = SafetensorsFile::open(test::fixture("llama") / "model.safetensors");
  EXPECT_EQ(weights.get("model.embed_tokens.weight").scalar_type(), torch::kBFloat16);
  EXPECT_FALSE(weights.contains("lm_head.weight"));  // tied
}

void expect_input_error(const std::filesystem::path& path, const std::string& needle) {
  Error e = expect_error([&] { SafetensorsFile::open(path); });
  EXPECT_EQ(e.kind(), ErrorKind::input);
  EXPECT_NE(e.message().find(needle), std::string::npos) << e.describe();
  EXPECT_NE(e.context().find(path.filename().string()), std::string::npos) << e.describe();
  EXPECT_FALSE(e.hint().empty());
}

TEST(Safetensors, TruncatedFilesAreErrors) {
  ScratchFolder dir;
  save_safetensors(dir / "t.safetensors", every_dtype());
  std::string bytes = read_file(dir / "t.safetensors");
  write_file(dir / "short_data.safetensors", bytes.substr(0, bytes.size() - 3), "");
  expect_input_error(dir / "short_data.safetensors", "bad data_offsets");
  write_file(dir / "short_header.safetensors", bytes.substr(0, 40), "");
  expect_input_error(dir / "short_header.safetensors", "truncated");
  write_file(dir / "tiny.safetensors", bytes.substr(0, 5), "");
  expect_input_error(dir / "tiny.safetensors", "truncated");
  Error missing = expect_error([&] { SafetensorsFile::open(dir / "absent.safetensors"); });
  EXPECT_EQ(missing.kind(), ErrorKind::input);
}

TEST(Safetensors, CorruptedHeadersAreErrors) {
  ScratchFolder dir;
  const std::string data(16, '\0');
  write_raw(dir / "json.safetensors", "{\"x\": {\"dtype\": \"F32\", ", data);
  expect_input_error(dir / "json.safetensors", "not JSON");
  write_raw(dir / "dtype.safetensors", R"({"x":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})", data);
  expect_input_error(dir / "dtype.safetensors", "unknown dtype \"Q4\"");
  write_raw(dir / "past.safetensors", R"({"x":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", data);
  expect_input_error(dir / "past.safetensors", "bad data_offsets");
  write_raw(dir / "size.safetensors", R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data);
  expect_input_error(dir / "size.safetensors", "needs 12");
  write_raw(dir / "overlap.safetensors",
            R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"y":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data);
  expect_input_error(dir / "overlap.safetensors", "overlap");
  write_raw(dir / "gap.safetensors", R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data);
  expect_input_error(dir / "gap.safetensors", "cover");
  write_raw(dir / "shape.safetensors", R"({"x":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", data);
  expect_input_error(dir / "shape.safetensors", "shape");
  write_raw(dir / "meta.safetensors", R"({"__metadata__":{"a":1},"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data);
  expect_input_error(dir / "meta.safetensors", "__metadata__");
  // And a sound one of the same bytes opens.
  write_raw(dir / "good.safetensors", R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data);
  EXPECT_TRUE(torch::equal(SafetensorsFile::open(dir / "good.safetensors").get("x"), torch::zeros({4})));
}

TEST(Safetensors, AbsentTensorAndUnsupportedDtypeAreErrors) {
  ScratchFolder dir;
  save_safetensors(dir / "t.safetensors", {{"x", torch::ones({2})}});
  auto file = SafetensorsFile::open(dir / "t.safetensors");
  Error e = expect_error([&] { file.get("y"); });
  EXPECT_NE(e.message().find("\"y\""), std::string::npos);
  Error w = expect_error([&] { save_safetensors(dir / "c.safetensors", {{"z", torch::ones({2}, torch::kComplexFloat)}}); });
  EXPECT_EQ(w.kind(), ErrorKind::input);
}

}  // namespace
}  // namespace cudal1::trainer
