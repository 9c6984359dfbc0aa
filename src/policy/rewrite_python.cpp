#include "policy/rewrite_python.h"

#include <algorithm>
#include <iterator>

#include "baselines/graph_task.h"
#include "core/error.h"
#include "policy/rewrite_reference.h"

namespace cudal1::policy {

namespace {

struct RewriteInfo {
  Rewrite rewrite;
  const char* name;
  const char* design;
};

constexpr RewriteInfo kRewriteInfo[] = {
    {Rewrite::graph, "graph",
     "CUDA Graph: on the first call with a given signature the forward is captured once over static input "
     "buffers (after warm-up calls on a side stream); every call copies its inputs in, replays the graph on "
     "the current stream and returns clones of the outputs. One launch replaces the forward's many kernel "
     "launches and their CPU overhead. Off CUDA, or where capture fails, the model runs eagerly."},
    {Rewrite::channels_last, "channels_last",
     "channels_last: the model's 4-D weights and the 4-D float inputs in NHWC, the layout cuDNN's fastest "
     "convolution kernels read and write, so no layout transposes run around them; 4-D outputs go back to "
     "the task's NCHW format. A model that needs its own layout (a view over a convolution's output) gets "
     "it back for good on its first failure."},
    {Rewrite::cudnn_benchmark, "cudnn_benchmark",
     "cuDNN autotuning (torch.backends.cudnn.benchmark): cuDNN times its convolution algorithms on the first "
     "call with each input shape and keeps the fastest, instead of choosing by heuristics."},
    {Rewrite::compile, "compile",
     "torch.compile (default mode): the forward traced by Dynamo and compiled by Inductor, which fuses "
     "elementwise work and reductions into fewer kernels. Compiled on the first call; where this torch has "
     "no torch.compile, or compiling fails, the model runs eagerly."},
    {Rewrite::compile_reduce_overhead, "compile_reduce_overhead",
     "torch.compile(mode=\"reduce-overhead\"): Inductor's fused kernels, replayed through CUDA graphs that "
     "torch.compile captures itself; outputs are cloned, since the next replay overwrites them. Where "
     "compiling fails, the model runs eagerly."},
    {Rewrite::torchscript, "torchscript",
     "TorchScript, traced and frozen: on the first call with a given signature the forward is traced and "
     "frozen, its parameters and buffers made constants, so whatever it computes from them alone (a merged or "
     "normalised weight, a table of positions) is computed once instead of on every call, and each call runs "
     "the remaining graph. Works without torch.compile (torch 1.x, the CPU). The eager model runs instead "
     "where the trace could be wrong or does not apply: tracing warned (a branch on a tensor's value), the "
     "forward differs between training and eval mode (dropout, batch statistics), an argument is not a "
     "tensor, or gradients are on."},
};

constexpr bool in_enum_order() {
  for (unsigned i = 0; i < std::size(kRewriteInfo); ++i)
    if (static_cast<unsigned>(kRewriteInfo[i].rewrite) != i) return false;
  return std::size(kRewriteInfo) == std::size(kAllRewrites);
}
static_assert(in_enum_order(), "kRewriteInfo is indexed by Rewrite: one entry per rewrite, in enum order");

const RewriteInfo& info(Rewrite r) { return kRewriteInfo[static_cast<unsigned>(r)]; }

// ---- the Python appended after the task; names are prefixed _cudal1_ like graph_task's ----

constexpr const char* kPrelude = R"PY(import torch as _cudal1_torch

# float32 stays float32 whichever algorithm runs: no TF32 in matrix products or convolutions
# (cuDNN's autotuner and its NHWC kernels pick TF32 ones on tensor-core GPUs when allowed).
_cudal1_torch.backends.cuda.matmul.allow_tf32 = False
_cudal1_torch.backends.cudnn.allow_tf32 = False
)PY";

constexpr const char* kMapTensors = R"PY(def _cudal1_map_tensors(out, fn):
    """fn applied to every tensor among a forward's outputs (in tuples, lists and dicts too)."""
    if isinstance(out, _cudal1_torch.Tensor):
        return fn(out)
    if isinstance(out, tuple) and hasattr(out, "_fields"):  # a named tuple
        return type(out)(*[_cudal1_map_tensors(v, fn) for v in out])
    if isinstance(out, (list, tuple)):
        return type(out)([_cudal1_map_tensors(v, fn) for v in out])
    if isinstance(out, dict):
        return {k: _cudal1_map_tensors(v, fn) for k, v in out.items()}
    return out
)PY";

constexpr const char* kLayoutHelpers = R"PY(def _cudal1_nhwc(value):
    """A 4-D float tensor in NHWC (channels_last); any other argument as it is."""
    if isinstance(value, _cudal1_torch.Tensor) and value.dim() == 4 and value.is_floating_point():
        return value.contiguous(memory_format=_cudal1_torch.channels_last)
    return value


def _cudal1_nchw(tensor):
    """A 4-D output back in the default (NCHW) format the task returns."""
    return tensor.contiguous() if tensor.dim() == 4 else tensor
)PY";

constexpr const char* kCompileHelper = R"PY(def _cudal1_compile(model, mode):
    """torch.compile(model, mode=mode), which compiles on the first call; None where this torch
    cannot (no torch.compile before 2.0, no Dynamo for this Python)."""
    compile_model = getattr(_cudal1_torch, "compile", None)
    if compile_model is None:
        return None
    try:
        return compile_model(model, mode=mode)
    except Exception:  # noqa: BLE001 — e.g. "Dynamo is not supported on Python 3.12+"
        return None
)PY";

constexpr const char* kTorchscriptHelpers = R"PY(def _cudal1_trace_key(args):
    """What a trace is specialised to: each argument's shape, strides, dtype and device; None when
    an argument is not a tensor (a trace takes tensors only)."""
    key = []
    for a in args:
        if not isinstance(a, _cudal1_torch.Tensor):
            return None
        key.append((tuple(a.shape), a.stride(), a.dtype, a.device))
    return tuple(key)


def _cudal1_freeze(model, args):
    """model's forward on arguments like these, traced by TorchScript and frozen: parameters and
    buffers become constants, so what the forward computes from them alone is computed once,
    here. None where the trace cannot be trusted: tracing warned (a branch on a tensor's value, a
    tensor built from Python numbers: a trace would bake either in), the forward differs between
    training and eval mode (freezing needs eval mode), or tracing failed."""
    import copy, re, warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", _cudal1_torch.jit.TracerWarning)
            with _cudal1_torch.no_grad():
                # Tracing runs the forward: on a copy, so the model's own state (running
                # statistics, a counter) does not change by it.
                probe = copy.deepcopy(model)
                graphs = []
                for training in (True, False):
                    probe.train(training)
                    traced = _cudal1_torch.jit.trace(probe, tuple(args), check_trace=False)
                    graphs.append(re.sub(r"___torch_mangle_\d+\.", "", str(traced.inlined_graph)))
        if graphs[0] != graphs[1]:  # dropout, batch statistics, `if self.training`
            return None
        return _cudal1_torch.jit.freeze(traced)
    except Exception:  # noqa: BLE001 — a TracerWarning, an output a trace cannot return, an operator it cannot record
        return None
)PY";

constexpr const char* kClassHead = R"PY(class @CLASS@(_cudal1_torch.nn.Module):
    """The task's Model with @LABEL@: the same outputs, dtypes and float32 arithmetic."""

    def __init__(self, *init_inputs, **init_kwargs):
        super().__init__()
        # Built first, so under the caller's seed it draws the same weights the task's Model does.
        self.model = Model(*init_inputs, **init_kwargs)
)PY";

constexpr const char* kInitChannelsLast = R"PY(        # NHWC weights for the NHWC inputs forward() passes: the values stay, only the layout changes.
        self._cudal1_nhwc = True  # False once the model proved it needs its own layout
        try:
            self.model.to(memory_format=_cudal1_torch.channels_last)
        except RuntimeError:  # a 5-D parameter cannot be NHWC: the task's layout throughout
            self._cudal1_nhwc = False
            self.model.to(memory_format=_cudal1_torch.contiguous_format)
)PY";

constexpr const char* kInitCudnnBenchmark = R"PY(        # cuDNN times its convolution algorithms on each new input shape and keeps the fastest
        # (among float32 ones: TF32 is off above).
        _cudal1_torch.backends.cudnn.benchmark = True
)PY";

constexpr const char* kInitCompile = R"PY(        # A plain attribute, out of the module tree: state_dict(), .to() and parameters() see the
        # model once. Compiled on the first call, for the device the model is on by then.
        self.__dict__["_cudal1_compiled"] = _cudal1_compile(self.model, "@MODE@")
        self._cudal1_compile_error = None
)PY";

constexpr const char* kInitTorchscript = R"PY(        # Frozen traces by argument signature (None: that signature runs eagerly). A plain
        # attribute, out of the module tree: state_dict(), .to() and parameters() see the model once.
        self.__dict__["_cudal1_frozen"] = {}
)PY";

constexpr const char* kForwardChannelsLast = R"PY(
    def forward(self, *args, **kwargs):
        if self._cudal1_nhwc:
            try:
                out = @RUN@(*[_cudal1_nhwc(a) for a in args], **kwargs)
                return _cudal1_map_tensors(out, _cudal1_nchw)
            except Exception:  # noqa: BLE001 — e.g. x.view(n, -1) over a convolution's NHWC output
                # The model needs its own layout (a view assumes its strides): back to it for
                # good, and this call runs as the task's does.
                self._cudal1_nhwc = False
                self.model.to(memory_format=_cudal1_torch.contiguous_format)
@RECOMPILE@        return @RUN@(*args, **kwargs)
)PY";

constexpr const char* kRecompile = R"PY(                # A compile that failed on NHWC inputs may work on the task's layout.
                self.__dict__["_cudal1_compiled"] = _cudal1_compile(self.model, "@MODE@")
)PY";

constexpr const char* kForwardPlain = R"PY(
    def forward(self, *args, **kwargs):
        return @RUN@(*args, **kwargs)
)PY";

constexpr const char* kRunCompiled = R"PY(
    def _cudal1_run(self, *args, **kwargs):
        compiled = self._cudal1_compiled
        if compiled is not None:
            try:
@CALL@            except Exception as e:  # noqa: BLE001 — no compiler for this device, an operator Dynamo cannot trace
                # The eager model from now on: a compile that failed once would fail again, slowly.
                self.__dict__["_cudal1_compiled"] = None
                self._cudal1_compile_error = f"{type(e).__name__}: {e}"
        return self.model(*args, **kwargs)
)PY";

constexpr const char* kRunFrozen = R"PY(
    def _cudal1_run(self, *args, **kwargs):
        # With gradients on, parameters must stay parameters: a frozen trace serves inference only.
        key = None if kwargs or _cudal1_torch.is_grad_enabled() else _cudal1_trace_key(args)
        if key is not None:
            frozen = self._cudal1_frozen.get(key, False)
            if frozen is False:  # a signature not traced yet
                frozen = self._cudal1_frozen[key] = _cudal1_freeze(self.model, args)
            if frozen is not None:
                try:
                    return frozen(*args)
                except Exception:  # noqa: BLE001 — the trace does not fit after all: eager for this signature
                    self._cudal1_frozen[key] = None
        return self.model(*args, **kwargs)
)PY";

constexpr const char* kCallCompiled = R"PY(                return compiled(*args, **kwargs)
)PY";

constexpr const char* kCallReduceOverhead = R"PY(                mark_step = getattr(getattr(_cudal1_torch, "compiler", None), "cudagraph_mark_step_begin", None)
                if mark_step is not None:
                    mark_step()  # a new call: its graphs may reuse the previous call's output memory
                # Clones: the next replay overwrites the graphs' outputs, and a caller may keep these.
                return _cudal1_map_tensors(compiled(*args, **kwargs), _cudal1_torch.Tensor.clone)
)PY";

std::string replaced(std::string text, const std::string& placeholder, const std::string& value) {
  for (std::size_t at = 0; (at = text.find(placeholder, at)) != std::string::npos; at += value.size())
    text.replace(at, placeholder.size(), value);
  return text;
}

// The class that applies every rewrite of `c` but graph, named `class_name`.
std::string rewritten_class(const std::string& class_name, Combination c) {
  Combination rest{c.bits & ~Combination::bit(Rewrite::graph)};
  bool compiled = c.has(Rewrite::compile) || c.has(Rewrite::compile_reduce_overhead);
  bool frozen = c.has(Rewrite::torchscript);
  std::string mode = c.has(Rewrite::compile_reduce_overhead) ? "reduce-overhead" : "default";
  std::string out = replaced(replaced(kClassHead, "@CLASS@", class_name), "@LABEL@", combination_label(rest));
  if (c.has(Rewrite::channels_last)) out += kInitChannelsLast;
  if (c.has(Rewrite::cudnn_benchmark)) out += kInitCudnnBenchmark;
  if (compiled) out += kInitCompile;
  if (frozen) out += kInitTorchscript;
  std::string run = compiled || frozen ? "self._cudal1_run" : "self.model";
  out += c.has(Rewrite::channels_last)
             ? replaced(kForwardChannelsLast, "@RECOMPILE@", compiled ? kRecompile : "")
             : std::string(kForwardPlain);
  if (compiled)
    out += replaced(kRunCompiled, "@CALL@", c.has(Rewrite::compile_reduce_overhead) ? kCallReduceOverhead : kCallCompiled);
  if (frozen) out += kRunFrozen;
  return replaced(replaced(out, "@RUN@", run), "@MODE@", mode);
}

}  // namespace

const char* rewrite_name(Rewrite r) { return info(r).name; }

const char* rewrite_design(Rewrite r) { return info(r).design; }

int Combination::size() const {
  int n = 0;
  for (Rewrite r : kAllRewrites) n += has(r);
  return n;
}

bool combination_allowed(Combination c) {
  if (c.empty() || c.bits >> std::size(kAllRewrites)) return false;
  if (c.has(Rewrite::compile_reduce_overhead) && (c.has(Rewrite::compile) || c.has(Rewrite::graph))) return false;
  if (c.has(Rewrite::torchscript) && (c.has(Rewrite::compile) || c.has(Rewrite::compile_reduce_overhead))) return false;
  return true;
}

std::string combination_label(Combination c) {
  std::string label;
  for (Rewrite r : kAllRewrites)
    if (c.has(r)) label += (label.empty() ? "" : "+") + std::string(rewrite_name(r));
  return label;
}

std::optional<Combination> parse_combination_label(std::string_view label) {
  Combination c;
  std::size_t start = 0;
  while (start <= label.size()) {
    std::size_t end = std::min(label.find('+', start), label.size());
    std::string_view part = label.substr(start, end - start);
    bool known = false;
    for (Rewrite r : kAllRewrites)
      if (part == rewrite_name(r) && !c.has(r)) {
        c = c.with(r);
        known = true;
      }
    if (!known) return std::nullopt;
    start = end + 1;
  }
  if (!combination_allowed(c)) return std::nullopt;
  return c;
}

std::string rewrite_label_in_code(const std::string& code) {
  std::size_t start = code.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  if (code.compare(start, std::string(kRewriteLabelPrefix).size(), kRewriteLabelPrefix) != 0) return {};
  start += std::string(kRewriteLabelPrefix).size();
  std::string label = code.substr(start, code.find('\n', start) - start);
  while (!label.empty() && (label.back() == '\r' || label.back() == ' ')) label.pop_back();
  return label;
}

std::string rewrite_candidate_source(const std::string& task_name, const std::string& reference, Combination c) {
  if (!combination_allowed(c))
    throw Error(ErrorKind::internal, "the rewrite combination '" + combination_label(c) + "' is not allowed",
                "combine at most one of compile, compile_reduce_overhead and torchscript, and never graph with "
                "compile_reduce_overhead",
                task_name);
  std::string source = normalized_reference(reference);
  require_kernelbench_task(task_name, source);
  std::string label = combination_label(c);
  std::string cookie = python_coding_line(source);
  std::string out = kRewriteLabelPrefix + label + "\n" + (cookie.empty() ? "" : cookie + "\n") +
                    "# Written by cudal1's built-in rewrite policy (" + kRewriteVersion + ") for task " +
                    comment_line_text(task_name) + ".\n"
                    "# The task's source follows unchanged, so Model, get_inputs and get_init_inputs import as\n"
                    "# written. ModelNew, appended at the end, runs the task's Model with the rewrites named on\n"
                    "# the first line; each keeps what it computes (same dtypes, float32 without TF32) and\n"
                    "# falls back to eager code where it cannot work.\n" +
                    source +
                    "\n\n# ---- appended by cudal1's rewrite policy (" + kRewriteVersion + ": " + label +
                    "); everything above is the task, unchanged ----\n" +
                    kPrelude;
  bool graph = c.has(Rewrite::graph);
  bool others = c.bits != Combination::bit(Rewrite::graph);
  if (graph) out += "\n\n" + graph_python_support();
  if (c.has(Rewrite::channels_last) || c.has(Rewrite::compile_reduce_overhead)) out += "\n\n" + std::string(kMapTensors);
  if (c.has(Rewrite::channels_last)) out += "\n\n" + std::string(kLayoutHelpers);
  if (c.has(Rewrite::compile) || c.has(Rewrite::compile_reduce_overhead)) out += "\n\n" + std::string(kCompileHelper);
  if (c.has(Rewrite::torchscript)) out += "\n\n" + std::string(kTorchscriptHelpers);
  // With graph, ModelNew captures the rewritten class (or the task's Model when graph is all).
  static const std::string kRewrittenClass = "_Cudal1Rewritten";
  if (others) out += "\n\n" + rewritten_class(graph ? kRewrittenClass : "ModelNew", c);
  if (graph) out += "\n\n" + graph_python_model_new(others ? kRewrittenClass : "Model");
  return out;
}

}  // namespace cudal1::policy
