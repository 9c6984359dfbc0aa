"""A task's file loaded, its models built and its inputs drawn from seeds: the one place every
trusted user of a task (the reference's cases, lint's probes, the cached eager time and
baselines) gets them from, so the same seed gives the same weights and inputs in each. The C++
parent and stored results rely on a seed's draws never changing.

The candidate's worker uses only the helpers that move case values (load_case_file, to_device),
bound here before any candidate code runs."""
import itertools

import torch

import loading
from tensor_io import _Tensor, _isinstance

_manual_seed = torch.manual_seed

_task_numbers = itertools.count()  # each loaded task gets a module name of its own


def load_task(path):
    """The task module at `path`; raises loading.LoadFailure saying what is wrong with it."""
    task = loading.load_module(path, f"cudal1_task_{next(_task_numbers)}")
    loading.require(task, path, ["Model", "get_inputs", "get_init_inputs"])
    return task


def task_failure(failure):
    """The reply for a task that cannot be loaded (a loading.LoadFailure)."""
    return {"ok": False, "error": "task", "failure": failure.to_json()}


def load_case_file(path):
    try:
        return torch.load(path, weights_only=False)
    except TypeError:  # torch < 1.13 has no weights_only
        return torch.load(path)


def to_device(values, device):
    return [v.to(device) if _isinstance(v, _Tensor) else v for v in values]


def clone(values):
    return [v.clone() if _isinstance(v, _Tensor) else v for v in values]


def build_model(task, seed, device):
    """(the task's Model under init seed `seed` on `device`, its constructor arguments). The
    arguments and the weights each start from the seed, so a Model's weights do not depend on
    how many numbers get_init_inputs() happened to draw."""
    _manual_seed(seed)
    init_inputs = list(task.get_init_inputs())
    _manual_seed(seed)
    return task.Model(*init_inputs).to(device), init_inputs


def inputs_as_written(task, seed):
    """The task's get_inputs() under `seed`, where the task puts them (the CPU, as a rule)."""
    _manual_seed(seed)
    return list(task.get_inputs())


def seeded_task(path, device):
    """The task's Model and its inputs on `device`, from seed 0: the same every time, for figures
    that are cached (eager time, baselines). Raises loading.LoadFailure."""
    task = load_task(path)
    model, _ = build_model(task, 0, device)
    return model, to_device(inputs_as_written(task, 0), device)


def _apply_distribution(values, dist, seed):
    """Re-draws floating inputs from another distribution; signs are kept so domains survive.
    Works where each tensor lives (a GPU does in milliseconds what the CPU does in seconds for the
    large tasks), with a generator on that device: the same seed gives the same inputs on the
    same kind of device."""
    if dist == "normal":
        return values
    gens = {}
    out = []
    for v in values:
        if _isinstance(v, _Tensor) and v.is_floating_point():
            x = v.double()
            if dist == "scaled_offset":
                x = 4.0 * x + 0.25 * x.abs()
            elif dist == "heavy_tailed":
                lo, hi = (-0.7, 0.7) if v.element_size() <= 2 else (-2.0, 2.0)
                gen = gens.get(v.device)
                if gen is None:
                    gen = gens[v.device] = torch.Generator(device=v.device).manual_seed(seed + 7919)
                mult = torch.randn(x.shape, generator=gen, dtype=torch.float64,
                                   device=v.device).clamp(-3, 3)
                x = x * torch.exp(mult * 0.7).clamp(float(torch.tensor(lo).exp()),
                                                    float(torch.tensor(hi).exp()))
            else:
                raise ValueError(f"unknown input distribution {dist}")
            v = x.to(v.dtype)
        out.append(v)
    return out


def draw_inputs(task, dist, seed, device):
    """One case's inputs on `device`: seeded get_inputs(), then the distribution. On a GPU the
    task's get_inputs() runs with that GPU as torch's default device, so its torch.randn draws
    there instead of on the CPU (seconds per case for the large tasks); a task whose inputs need
    the CPU (numpy, an explicit device) draws them as written."""
    values = None
    if device.type == "cuda" and hasattr(torch, "get_default_device"):
        _manual_seed(seed)
        try:
            with torch.device(device):
                values = list(task.get_inputs())
        except Exception:
            values = None
    if values is None:
        values = inputs_as_written(task, seed)
    return _apply_distribution(to_device(values, device), dist, seed)
