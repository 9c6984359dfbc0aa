#include "baselines/graph_task.h"

#include <regex>
#include <utility>

#include "core/error.h"
#include "core/hash.h"

namespace cudal1 {

namespace {

// The Python appended after the task's source, in the pieces other generators reuse (header).
// Names are prefixed _cudal1_ so that none of the task's own module-level names (it may import
// torch under another name, or define helpers) is replaced.
constexpr const char* kBanner =
    "# ---- appended by cudal1 enrich (graph-task/1); everything above is the task, unchanged ----\n";
constexpr const char* kImportOs = "import os as _cudal1_os\n";
constexpr const char* kImportTorch = "import torch as _cudal1_torch\n";

constexpr const char* kSettings = R"PY(# CUDA_GRAPH_STRICT=1 (set by `cudal1 enrich` while it verifies this file): a call that cannot
# replay a graph raises instead of running Model eagerly, so an accepted file replayed its graphs.
_CUDAL1_STRICT = _cudal1_os.environ.get("CUDA_GRAPH_STRICT", "0") not in ("", "0")
_CUDAL1_WARMUP = 3      # eager calls on a side stream before capture
_CUDAL1_MAX_GRAPHS = 4  # call signatures kept captured per instance; the oldest is dropped first
)PY";

constexpr const char* kKey = R"PY(def _cudal1_key(value, top=True):
    """What a graph captured for this argument depends on: a tensor's shape, strides, dtype and
    device (its values are copied in on every call); any other value itself. None for a tensor
    inside a container, whose new values the graph would never see."""
    if isinstance(value, _cudal1_torch.Tensor):
        return ("<tensor>", tuple(value.shape), value.stride(), value.dtype, value.device) if top else None
    if isinstance(value, (list, tuple, dict)):
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        keys = tuple((repr(k), _cudal1_key(v, False)) for k, v in items)
        return None if any(k is None for _, k in keys) else (type(value).__qualname__, keys)
    return (type(value).__qualname__, repr(value))
)PY";

constexpr const char* kClone = R"PY(def _cudal1_clone(out):
    """Outputs cloned out of the graph's static buffers (tensors in tuples, lists and dicts too)."""
    if isinstance(out, _cudal1_torch.Tensor):
        return out.clone()
    if isinstance(out, tuple) and hasattr(out, "_fields"):  # a named tuple
        return type(out)(*[_cudal1_clone(v) for v in out])
    if isinstance(out, (list, tuple)):
        return type(out)([_cudal1_clone(v) for v in out])
    if isinstance(out, dict):
        return {k: _cudal1_clone(v) for k, v in out.items()}
    return out
)PY";

// class ModelNew, split where it names the class it wraps.
constexpr const char* kModelNewHead = R"PY(class ModelNew(_cudal1_torch.nn.Module):
    """The task's Model; on CUDA its forward is captured once per call signature in a CUDA graph
    over static input buffers and replayed on the current stream. Otherwise it runs eagerly."""

    def __init__(self, *init_inputs, **init_kwargs):
        super().__init__()
        # Built first, so under the caller's seed it draws the same weights the task's Model does.
        self.model = )PY";
constexpr const char* kModelNewTail = R"PY((*init_inputs, **init_kwargs)
        self._cudal1_graphs = {}  # signature -> (graph, static inputs, static outputs)
        self._cudal1_eager = {}   # signature -> why its capture failed (it runs eagerly)

    def _apply(self, *args, **kwargs):
        # .to(), .cuda(), .half() give parameters new storage: graphs over the old one are stale.
        self._cudal1_graphs, self._cudal1_eager = {}, {}
        return super()._apply(*args, **kwargs)

    def train(self, mode=True):
        # Training and evaluation modes run different kernels (batch norm, dropout).
        self._cudal1_graphs, self._cudal1_eager = {}, {}
        return super().train(mode)

    def forward(self, *args, **kwargs):
        key, device, why = self._cudal1_signature(args, kwargs)
        if key is not None:
            entry = self._cudal1_graphs.get(key)
            if entry is None and key not in self._cudal1_eager:
                try:
                    entry = self._cudal1_capture(key, args, device)
                except Exception as e:  # noqa: BLE001 — any capture failure means eager, or (strict) an error
                    why = f"CUDA graph capture failed: {type(e).__name__}: {e}"
                    if _CUDAL1_STRICT:
                        raise RuntimeError(why) from e
                    self._cudal1_eager[key] = why
            if entry is not None:
                graph, static_in, static_out = entry
                for dst, src in zip(static_in, args):
                    if isinstance(dst, _cudal1_torch.Tensor):
                        dst.copy_(src)
                graph.replay()  # on the current stream, like any eager call
                # Clones, not the static outputs: the next replay overwrites those, and a caller
                # may hold outputs across calls (a harness comparing them after later calls, a
                # loop keeping a list of results), which must not change under it.
                return _cudal1_clone(static_out)
            why = why or self._cudal1_eager[key]
        if _CUDAL1_STRICT:
            raise RuntimeError(f"no CUDA graph replay: {why}")
        return self.model(*args, **kwargs)

    def _cudal1_signature(self, args, kwargs):
        """(key, device, None) when this call can replay a graph, else (None, None, why not)."""
        if kwargs:
            return None, None, "keyword arguments are not captured"
        key = tuple(_cudal1_key(a) for a in args)
        if any(k is None for k in key):
            return None, None, "an argument is a container holding tensors"
        devices = {k[4] for k in key if k[0] == "<tensor>"}
        if not devices:  # no tensor arguments: the model's own tensors say where it runs
            devices = {t.device for t in self.model.parameters()} | {t.device for t in self.model.buffers()}
        if len(devices) != 1 or next(iter(devices)).type != "cuda":
            where = ", ".join(sorted(str(d) for d in devices)) or "no device"
            return None, None, f"CUDA graphs need a CUDA device (this call is on {where})"
        if _cudal1_torch.is_grad_enabled() and (
                any(a.requires_grad for a in args if isinstance(a, _cudal1_torch.Tensor)) or
                any(p.requires_grad for p in self.model.parameters())):
            return None, None, "autograd is on (the graph replays inference: call under torch.no_grad())"
        return key, next(iter(devices)), None

    def _cudal1_capture(self, key, args, device):
        torch = _cudal1_torch
        with torch.cuda.device(device), torch.no_grad():
            static_in = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
            current = torch.cuda.current_stream()
            side = torch.cuda.Stream()
            side.wait_stream(current)  # the clones are written before the warm-up reads them
            with torch.cuda.stream(side):
                for _ in range(_CUDAL1_WARMUP):  # off the graph: lazy initialisation, cuBLAS workspaces
                    self.model(*static_in)
            current.wait_stream(side)  # joined back: nothing is left running on the side stream
            graph = torch.cuda.CUDAGraph()
            # Captured on the same private stream, dropped afterwards: a failed capture leaves
            # nothing behind on a stream anyone else uses.
            with torch.cuda.graph(graph, stream=side):
                static_out = self.model(*static_in)
        if len(self._cudal1_graphs) >= _CUDAL1_MAX_GRAPHS:
            self._cudal1_graphs.pop(next(iter(self._cudal1_graphs)))
        self._cudal1_graphs[key] = (graph, static_in, static_out)
        return self._cudal1_graphs[key]
)PY";

std::string with_line_endings(const std::string& text, const std::string& eol) {
  if (eol == "\n") return text;
  std::string out;
  for (char c : text) {
    if (c == '\n') out += eol;
    else out += c;
  }
  return out;
}

}  // namespace

std::string python_coding_line(const std::string& source) {
  static const std::regex cookie(R"(^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+)");
  std::size_t first = source.find('\n');
  std::size_t second = first == std::string::npos ? first : source.find('\n', first + 1);
  for (std::string line : {source.substr(0, first), first == std::string::npos ? std::string()
                                                        : source.substr(first + 1, second - first - 1)}) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (std::regex_search(line, m, cookie)) return line;
  }
  return {};
}

void require_kernelbench_task(const std::string& task_name, const std::string& source) {
  static const std::pair<const char*, std::regex> required[] = {
      {"class Model", std::regex(R"((^|\n)\s*class\s+Model\b|(^|\n)Model\s*=)")},
      {"get_inputs", std::regex(R"(\bget_inputs\b)")},
      {"get_init_inputs", std::regex(R"(\bget_init_inputs\b)")}};
  for (auto& [name, pattern] : required)
    if (!std::regex_search(source, pattern))
      throw Error(ErrorKind::task, "task " + task_name + " defines no " + name + ": it is not a KernelBench task",
                  "a task defines class Model(nn.Module), get_inputs() and get_init_inputs()", task_name);
}

std::string graph_python_support() {
  return std::string(kImportOs) + "\n" + kSettings + "\n\n" + kKey + "\n\n" + kClone;
}

std::string graph_python_model_new(const std::string& wrapped_class) {
  return kModelNewHead + wrapped_class + kModelNewTail;
}

std::string comment_line_text(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return text;
}

std::string graph_task_source(const std::string& task_name, const std::string& task_source) {
  const std::string bom = "\xEF\xBB\xBF";
  std::string source = task_source.rfind(bom, 0) == 0 ? task_source.substr(bom.size()) : task_source;
  require_kernelbench_task(task_name, source);
  // The task's own line endings for what we add: a file with CRLF lines stays CRLF throughout.
  std::string eol = source.find("\r\n") != std::string::npos ? "\r\n" : "\n";
  std::string cookie = python_coding_line(source);
  std::string header =
      (cookie.empty() ? "" : cookie + "\n") +
      "# Generated by `cudal1 enrich` (" + std::string(kGraphTaskVersion) + "): the CUDA Graph version of task\n"
      "# " + comment_line_text(task_name) + ", whose source has sha256 " + sha256_hex(task_source) + ".\n"
      "# How: the task's source follows unchanged, so Model, get_inputs and get_init_inputs import as\n"
      "# written. ModelNew, appended at the end, builds Model(*get_init_inputs()) and, on the first\n"
      "# call with a given signature (tensor shapes, strides, dtypes, devices; other arguments' values)\n"
      "# on CUDA, clones the inputs into static buffers, runs 3 warm-up calls on a side stream joined\n"
      "# back before capture, and captures one forward in a CUDA graph. Every call copies its inputs\n"
      "# into those buffers, replays the graph on the current stream and returns clones of the static\n"
      "# outputs. Off CUDA, or where capture fails, it calls Model eagerly; with CUDA_GRAPH_STRICT=1\n"
      "# that is an error instead, which is how `cudal1 enrich` verifies the graph path.\n";
  std::string out = (task_source.rfind(bom, 0) == 0 ? bom : "") + with_line_endings(header, eol) + source;
  if (!source.empty() && source.back() != '\n') out += eol;  // the task's last line may lack one
  out += with_line_endings("\n\n" + std::string(kBanner) + kImportOs + "\n" + kImportTorch + "\n" + kSettings + "\n\n" +
                               kKey + "\n\n" + kClone + "\n\n" + graph_python_model_new("Model"),
                           eol);
  return out;
}

std::string graph_failure_reason(const std::string& error) {
  static const std::string capture = "CUDA graph capture failed: ", replay = "no CUDA graph replay: ";
  if (auto at = error.find(capture); at != std::string::npos) {
    std::string rest = error.substr(at + capture.size());
    std::smatch m;
    static const std::regex cuda_error(R"(cudaError\w+)"), type(R"(^[\w.]+)");
    if (std::regex_search(rest, m, cuda_error)) return "CUDA graph capture failed (" + m.str(0) + ")";
    if (std::regex_search(rest, m, type)) return "CUDA graph capture failed (" + m.str(0) + ")";
    return "CUDA graph capture failed";
  }
  if (auto at = error.find(replay); at != std::string::npos) {
    std::string why = error.substr(at);
    why = why.substr(0, why.find_first_of("\r\n"));
    return why.size() > 160 ? why.substr(0, 160) : why;
  }
  return {};
}

}  // namespace cudal1
