"""Writes tensors in the cudal1 tensor file format, which the C++ parent reads and compares.

Format: the line b"CUDAL1T1\n", then per value one JSON header line
{"dtype": "float32", "shape": [...], "nbytes": N} followed by N raw little-endian bytes, C order.
A value that is not a tensor gets {"kind": "other", "type": "<type name>"} and no bytes.
"""
import json

import torch

MAGIC = b"CUDAL1T1\n"
_open = open  # bound before any candidate code runs: a replaced builtins.open must not write the outputs

# Method descriptors of the C tensor type: a candidate can reassign torch.Tensor's Python
# methods, but not these.
_TB = getattr(torch._C, "TensorBase", None) or torch._C._TensorBase
_detach = _TB.detach
_to = _TB.to
_contiguous = _TB.contiguous
_reshape = _TB.reshape
_view = _TB.view
_numpy = _TB.numpy
_Tensor = torch.Tensor
_type = type
_isinstance = isinstance
_dumps = json.dumps


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def byte_view(t):
    """The tensor's values as a flat uint8 tensor where it lives, C order (a copy only when the
    tensor is not contiguous)."""
    flat = _reshape(_contiguous(_detach(t)), (-1,))
    return flat if flat.dtype == torch.uint8 else _view(flat, torch.uint8)


def tensor_bytes(t):
    """Raw bytes of a tensor's values, C order, on the host."""
    return _numpy(byte_view(_to(_detach(t), "cpu"))).tobytes()


def write_values(path, values):
    with _open(path, "wb") as f:
        f.write(MAGIC)
        for v in values:
            if _isinstance(v, _Tensor):
                data = tensor_bytes(v)
                header = {"dtype": dtype_name(v.dtype), "shape": list(v.shape), "nbytes": len(data)}
                f.write(_dumps(header).encode() + b"\n")
                f.write(data)
            else:
                f.write(_dumps({"kind": "other", "type": _type(v).__name__}).encode() + b"\n")


def as_list(out):
    """Outputs as a flat list: a tensor, or a tuple/list of values."""
    if _isinstance(out, (tuple, list)):
        return list(out)
    return [out]
