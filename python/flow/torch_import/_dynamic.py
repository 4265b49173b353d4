"""Dynamic dimensions of a torch.export program as Flow size symbols.

`flow.compile(model, args, dynamic={"x": {0: ("batch", 1, 8)}})` names a
dimension of an input and bounds it; the export then traces it as a
symbol, and the importer writes every dimension torch.export computed from
it as an extent over the names (`batch`, `batch*seq`), with the bounds in
the function's `flow.dims`. An ExportedProgram exported with its own
`dynamic_shapes` works too: its symbols keep torch's names (`s77`).
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, Mapping, Optional, Tuple

from .._emitter import Unsupported, is_symbol_name

#: How a user names a dynamic dimension: (name, min, max).
DimSpec = Tuple[str, int, int]


def check_dynamic(dynamic) -> Dict[str, Dict[int, DimSpec]]:
    """`dynamic` as {input name: {dimension: (name, min, max)}}, or
    ValueError naming what is wrong with it."""
    if not isinstance(dynamic, Mapping):
        raise ValueError("dynamic= is a dict {input name: {dimension: "
                         "(symbol, min, max)}}, got "
                         f"{type(dynamic).__name__}")
    out: Dict[str, Dict[int, DimSpec]] = {}
    bounds: Dict[str, Tuple[int, int]] = {}
    for input_name, dims in dynamic.items():
        if not isinstance(dims, Mapping):
            raise ValueError(f"dynamic[{input_name!r}] is a dict {{dimension: "
                             f"(symbol, min, max)}}, got {type(dims).__name__}")
        out[input_name] = {}
        for dim, spec in dims.items():
            if not (isinstance(spec, tuple) and len(spec) == 3 and
                    isinstance(spec[0], str) and
                    all(isinstance(b, int) and not isinstance(b, bool)
                        for b in spec[1:])):
                raise ValueError(f"dynamic[{input_name!r}][{dim!r}] is "
                                 "(symbol, min, max), for example "
                                 f"('batch', 1, 8); got {spec!r}")
            name, lo, hi = spec
            if not is_symbol_name(name):
                raise ValueError(f"size symbol {name!r} is not a name: a "
                                 "letter or '_', then letters, digits or '_'")
            if not 1 <= lo <= hi:
                raise ValueError(f"size symbol {name!r} needs bounds "
                                 f"1 <= min <= max, got [{lo}, {hi}]")
            if bounds.setdefault(name, (lo, hi)) != (lo, hi):
                raise ValueError(f"size symbol {name!r} has two bounds: "
                                 f"{bounds[name]} and {(lo, hi)}")
            if not isinstance(dim, int) or isinstance(dim, bool):
                raise ValueError(f"dynamic[{input_name!r}] keys are "
                                 f"dimension numbers, got {dim!r}")
            out[input_name][dim] = spec
    return out


def dynamic_shapes(module, args, kwargs, dynamic) -> Dict[str, Any]:
    """torch.export's dynamic_shapes for the inputs `dynamic` names: one
    torch.export.Dim per symbol (inputs that share a symbol share it)."""
    import torch
    spec = check_dynamic(dynamic)
    forward = module.forward if isinstance(module, torch.nn.Module) \
        else module
    parameters = list(inspect.signature(forward).parameters)
    names = parameters[:len(args)] + list((kwargs or {}).keys())
    unknown = sorted(set(spec) - set(names))
    if unknown:
        raise ValueError(f"dynamic= names input(s) {unknown} the model does "
                         f"not take; its inputs are {names}")
    values = dict(zip(parameters, args), **(kwargs or {}))
    dims: Dict[str, Any] = {}
    result: Dict[str, Any] = {}
    for name in names:
        if name not in spec:
            result[name] = None
            continue
        rank = getattr(values.get(name), "dim", lambda: None)()
        entry = {}
        for d, (symbol, lo, hi) in spec[name].items():
            if rank is None or not -rank <= d < rank:
                raise ValueError(f"dynamic[{name!r}] names dimension {d}, "
                                 f"which input {name!r} of rank {rank} does "
                                 "not have")
            if symbol not in dims:
                dims[symbol] = torch.export.Dim(symbol, min=lo, max=hi)
            entry[d % rank] = dims[symbol]
        result[name] = entry
    return result


class Symbols:
    """The size symbols of one exported program: torch's sympy symbols
    named by the user's `dynamic=` (or by torch), with their bounds."""

    def __init__(self, ep, dynamic: Optional[Dict[str, Dict[int, DimSpec]]]):
        self.ep = ep
        self.names: Dict[Any, str] = {}
        self.bounds: Dict[str, Tuple[int, int]] = {}
        self.user = dynamic or {}

    def name_inputs(self, input_name: str, val) -> None:
        """Names the symbols of user input `input_name` (its FakeTensor
        `val`) as `dynamic=` does."""
        for d, (symbol, _, _) in self.user.get(input_name, {}).items():
            size = val.shape[d]
            expr = getattr(getattr(size, "node", None), "expr", None)
            if expr is None or not getattr(expr, "is_Symbol", False):
                raise Unsupported(
                    f"dimension {d} of input '{input_name}' is not dynamic "
                    f"in the exported program (torch.export specialized it "
                    f"to {size}); its symbol '{symbol}' needs the model to "
                    "work for every size in its bounds")
            self.names.setdefault(expr, symbol)

    def _name(self, symbol) -> str:
        name = self.names.get(symbol)
        if name is None:
            name = str(symbol)
            self.names[symbol] = name
        if name not in self.bounds:
            ranges = self.ep.range_constraints.get(symbol)
            lo = getattr(ranges, "lower", None)
            hi = getattr(ranges, "upper", None)
            try:
                finite = bool(hi.is_finite) if hasattr(hi, "is_finite") \
                    else True
                lo, hi = int(lo), int(hi)
                if not finite:
                    raise OverflowError
            except Exception:  # infinite or unknown: sympy's own errors
                raise Unsupported(
                    f"size symbol '{name}' has no finite bounds in the "
                    "exported program: give its (min, max) in dynamic=")
            self.bounds[name] = (max(lo, 1), hi)
        return name

    def extent(self, size):
        """An int for a static size; an extent's text for a symbolic one."""
        if isinstance(size, int):
            return size
        expr = getattr(getattr(size, "node", None), "expr", None)
        if expr is None:
            return int(size)
        import sympy
        expr = sympy.expand(expr)
        if expr.is_Integer:
            return int(expr)
        terms = []
        for term in sympy.Add.make_args(expr):
            coefficient, rest = term.as_coeff_Mul()
            if not coefficient.is_Integer:
                raise Unsupported(f"the size {expr} is not a polynomial "
                                  "with integer coefficients")
            factors = [str(int(coefficient))] if rest == 1 or \
                coefficient != 1 else []
            if rest != 1:
                for factor in sympy.Mul.make_args(rest):
                    base, power = factor.as_base_exp()
                    if not base.is_Symbol or not power.is_Integer or \
                            power < 1:
                        raise Unsupported(
                            f"the size {expr} is not a polynomial over the "
                            "size symbols (Flow's extents add and multiply "
                            "symbols; they do not divide them)")
                    factors += [self._name(base)] * int(power)
            terms.append("*".join(factors))
        from .. import _flow
        return _flow.normalize_extent(" + ".join(terms))

    def shape(self, sizes) -> Tuple:
        return tuple(self.extent(s) for s in sizes)

    def dims_attribute(self) -> Optional[str]:
        """The function's `flow.dims` text (None without symbols)."""
        if not self.bounds:
            return None
        return "[" + ", ".join(f'#flow.dim<"{n}", {lo}, {hi}>'
                               for n, (lo, hi) in self.bounds.items()) + "]"
