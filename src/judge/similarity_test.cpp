// Similarity of candidates' code: renaming hides nothing, unrelated code stays far.
#include "judge/similarity.h"

#include <gtest/gtest.h>

#include "core/hash.h"
#include "judge/hack_cases.h"
#include "judge/test_support.h"

namespace cudal1::judge {
namespace {

// hack_scale_add_cache_by_data_ptr.py with every argument and local name and the comments changed.
const char* kRenamedDataPtrCache = R"py(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.scale = factor
        self._cache = {}

    def forward(self, a, b):
        fingerprint = (a.data_ptr(), b.data_ptr(), tuple(a.shape))  # just an index
        found = self._cache.get(fingerprint)
        if found is not None:
            return found.clone()
        result = a * self.scale + b
        self._cache[fingerprint] = result.clone()
        return result
)py";

const char* kUnrelated = R"py(import torch
from torch.utils.cpp_extension import load_inline

source = """
__global__ void relu_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0;
}
"""
relu = load_inline(name="relu", cpp_sources="", cuda_sources=source, functions=["relu"])

def get_inputs():
    return [torch.randn(4096, 4096)]

def get_init_inputs():
    return []

class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        out = torch.empty_like(x)
        for chunk in range(0, x.numel(), 1 << 20):
            out.view(-1)[chunk:chunk + (1 << 20)] = relu.relu(x.view(-1)[chunk:chunk + (1 << 20)])
        return out
)py";

TEST(Similarity, TokensDropCommentsAndStringsAndKeepTheWordsHacksAreMadeOf) {
  auto t = normalised_tokens("hit = self._memo.get(id(x))  # HACK\nname = 'x' \"\"\"doc\"\"\" 3.5e-3");
  std::vector<std::string> want = {"ID", "=", "self", ".", "_memo", ".", "get", "(", "id", "(", "ID", ")", ")",
                                   "ID", "=", "STR", "STR", "NUM"};
  EXPECT_EQ(t, want);
}

TEST(Similarity, ARenamedCopyOfAFixtureIsNearestToItsOriginal) {
  TempStore s("similar");
  import_fixtures(*s.store, fixture_candidates());
  std::vector<HackCase> cases = s.store->hack_cases();
  ASSERT_GT(cases.size(), 10u);
  std::string reference = read_file(fixture_candidates().parent_path() / "tasks" / "scale_add.py");
  std::vector<Neighbour> near = nearest(cases, kRenamedDataPtrCache, reference, 3);
  ASSERT_EQ(near.size(), 3u);
  EXPECT_EQ(near[0].hack.evidence.value("fixture", ""), "hack_scale_add_cache_by_data_ptr.py");
  EXPECT_DOUBLE_EQ(near[0].similarity, 1.0);
  EXPECT_LT(near[1].similarity, near[0].similarity);
}

TEST(Similarity, UnrelatedCodeIsFar) {
  TempStore s("far");
  import_fixtures(*s.store, fixture_candidates());
  MinHash query(kUnrelated), original(kRenamedDataPtrCache);
  EXPECT_LT(query.similarity(original), 0.2);
  for (auto& n : nearest(s.store->hack_cases(), kUnrelated, "", 3)) EXPECT_LT(n.similarity, 0.5) << n.hack.evidence.dump();
  EXPECT_EQ(MinHash("").similarity(MinHash("")), 0.0) << "empty code is like nothing";
}

}  // namespace
}  // namespace cudal1::judge
