"""flow.compile_train: a training step compiled from a torch module, a loss
and an optimizer.

The step is one executable: the forward pass and the loss (imported with
torch.export), their gradients (flow-autodiff) and the optimizer's update
(flow-apply-optimizer). The model's trainable parameters and the
optimizer's moments are the step's state: named arguments whose next
values the step writes over them in place (flow-tie-state). The runtime
session keeps the state between calls; a call passes only the batch and
the learning rate, and gets the loss back (docs/training.md).
"""

from __future__ import annotations

import inspect
import math
import os
import re
import tempfile
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ._flow import FlowError
from . import optim as _optim


def _loss_kind(model, loss_fn, example_batch) -> str:
    """How the step calls `loss_fn` on a batch: "model" (None:
    model(*batch) is the loss), "criterion" (a torch criterion such as
    torch.nn.CrossEntropyLoss(): criterion(model(*batch[:-1]), batch[-1]))
    or "function" (loss_fn(model, *batch)). A loss that cannot be called
    either way on the example batch is refused, saying what is expected."""
    import torch
    expected = ("loss_fn is loss_fn(model, *batch) returning the scalar "
                "loss (e.g. lambda m, x, y: F.cross_entropy(m(x), y)), a "
                "torch criterion such as torch.nn.CrossEntropyLoss() (called "
                "as criterion(model(*batch[:-1]), batch[-1])), or None "
                "(model(*batch) is the loss)")
    if loss_fn is None:
        return "model"
    if loss_fn is model:
        raise FlowError(f"loss_fn is the model itself; {expected}")
    if not callable(loss_fn):
        raise FlowError(f"loss_fn is a {type(loss_fn).__name__}, not "
                        f"callable; {expected}")
    try:
        signature = inspect.signature(loss_fn)
    except (TypeError, ValueError):  # no signature to check (a builtin)
        signature = None
    # A module other than the model is a criterion (torch.nn's losses
    # always; another module unless it takes the model and the batch).
    if isinstance(loss_fn, torch.nn.Module) and (
            isinstance(loss_fn, torch.nn.modules.loss._Loss)
            or signature is None
            or not _binds(signature, model, *example_batch)):
        if len(example_batch) < 2:
            raise FlowError(
                f"loss_fn is the criterion {type(loss_fn).__name__}, which "
                "takes the model's output and the target: the batch must be "
                f"(inputs..., target), got {len(example_batch)} element(s)")
        return "criterion"
    if signature is not None and not _binds(signature, model,
                                            *example_batch):
        raise FlowError(
            f"loss_fn{signature} cannot be called with the model and the "
            f"{len(example_batch)} tensor(s) of the batch; {expected}")
    return "function"


def _binds(signature, *args) -> bool:
    try:
        signature.bind(*args)
    except TypeError:
        return False
    return True


def _loss_module(model, loss_fn, kind: str):
    """A module whose forward is the loss of a batch (torch is imported
    only when training is used); `kind` is _loss_kind's."""
    import torch

    class LossModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model
            if kind == "criterion":
                self.criterion = loss_fn

        def forward(self, *batch):
            if kind == "model":
                return self.model(*batch)
            if kind == "criterion":
                # As a PyTorch training loop: the last tensor is the target.
                return self.criterion(self.model(*batch[:-1]), batch[-1])
            return loss_fn(self.model, *batch)

    return LossModule()


def _signature_roles(text: str, function: str):
    """(argument roles, result roles) of `function` after the training
    passes, read from its signature: a state name, "lr", "input", or
    (results) "loss"."""
    # On a mesh, rank 0's program (its state and learning rate carry the
    # same names; the types are its pieces').
    header = next((line for line in text.splitlines()
                   if f"func.func @{function}(" in line
                   or f"func.func @{function}_r0(" in line), None)
    if header is None:
        raise FlowError(f"compiled training step has no @{function}")
    args, results = header.split(") -> (", 1)
    arg_roles = []
    for arg in re.split(r"%arg\d+: ", args)[1:]:
        state = re.search(r'flow.state = "([^"]+)"', arg)
        arg_roles.append(state[1] if state else
                         "lr" if "flow.learning_rate" in arg else "input")
    result_roles = []
    for result in results.split("tensor<")[1:]:
        state = re.search(r'flow.state = "([^"]+)"', result)
        result_roles.append(state[1] if state else "loss")
    return arg_roles, result_roles


class TrainStep:
    """A compiled training step: `loss = step(*batch)` runs forward,
    backward and the optimizer update once.

    The state (parameters, optimizer moments, the step count) stays in the
    runtime between calls and is updated in place; a call passes the batch
    and the learning rate only. `step.lr` is the learning rate of the next
    call (change it between calls for a schedule). `state_dict()` /
    `load_state_dict()` give and take the whole state as torch tensors;
    `save(path)` / `load(path)` write and read it as safetensors;
    `parameters()` gives the trained weights and `copy_to(model)` writes
    them into a torch module. With `stop_on_nan` (compile_train's default)
    a step whose loss is NaN or infinite leaves the state as it was and
    raises FlowError."""

    def __init__(self, module, program, function: str, lr: float,
                 roles: Tuple[List[str], List[str]], stop_on_nan: bool):
        self.module = module
        self.program = program
        self.function = function
        self.lr = float(lr)
        self.stop_on_nan = stop_on_nan
        self.steps = 0
        self._arg_roles, self._result_roles = roles
        self._parameter_names = [n for _, n in program.state_arguments]
        self._names = list(module._module.state_names())
        for name, tensor in program.initial_state.items():
            try:
                module._module.set_state(name, np.array(_numpy(tensor),
                                                        order="C"))
            except FlowError as e:
                if "differs between processes" not in str(e):
                    raise
                # On a mesh every process gives the same first state.
                hint = ("pass seed= to compile_train, or call "
                        "torch.manual_seed with the same seed in every "
                        "process" if name == "rng.seed" else
                        "build the model with the same weights in every "
                        "process (torch.manual_seed with the same seed "
                        "before building it, or load the same weights)")
                raise FlowError(f"{e}; {hint}") from None

    def __call__(self, *batch):
        leaves, as_torch = _flatten(batch, self.program)
        inputs, user = [], iter(self.program.input_leaves)
        for role in self._arg_roles:
            if role == "input":
                inputs.append(leaves[next(user)])
            elif role == "lr":
                inputs.append(np.array(self.lr, np.float32))
        (loss,) = self.module._module.step(self.function, inputs)
        if not math.isfinite(float(loss)) and self.stop_on_nan:
            raise FlowError(
                f"the loss is {float(loss)} at step {self.steps + 1}; the "
                "state was not updated")
        self.steps += 1
        if as_torch:
            import torch
            return torch.from_numpy(np.array(loss))
        return loss

    @property
    def rank(self) -> int:
        """This process' device in the mesh (0 without a mesh)."""
        return self.module.rank

    @property
    def state_bytes(self) -> int:
        """The bytes of state this process keeps (on a mesh, its pieces:
        with shard_state, its rows of the moments)."""
        return self.module._module.state_bytes

    @property
    def collective_bytes(self) -> List[int]:
        """The bytes each collective of the last step moved on this process
        (as the compile report counts them)."""
        return list(self.module._module.collective_bytes)

    # State ---------------------------------------------------------------
    def _arrays(self) -> Dict[str, np.ndarray]:
        return {n: self.module._module.get_state(n) for n in self._names}

    def state_dict(self) -> Dict[str, Any]:
        """The whole state, by name, as torch tensors (copies)."""
        import torch
        return {k: torch.from_numpy(v) for k, v in self._arrays().items()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Replaces the whole state; every name, shape and dtype must be
        this step's."""
        missing = sorted(set(self._names) - set(state))
        unexpected = sorted(set(state) - set(self._names))
        if missing or unexpected:
            raise FlowError(
                "the state does not belong to this training step: "
                + (f"missing {missing}" if missing else "")
                + ("; " if missing and unexpected else "")
                + (f"unexpected {unexpected}" if unexpected else ""))
        # Checked whole before any is set (read from the executable: no
        # state is copied or gathered for it).
        new = {}
        for name, value in state.items():
            array = _numpy(value)
            dtype, shape = self.module._module.state_type(name)
            if array.shape != tuple(shape) or array.dtype != dtype:
                raise FlowError(
                    f"state '{name}' is {array.dtype}{list(array.shape)}; "
                    f"this training step's is {dtype}{list(shape)}")
            new[name] = np.array(array, order="C")
            # The runtime's rule (finite values, a non-negative step count
            # and second moments), checked for every tensor before any is
            # set.
            try:
                self.module._module.check_state(name, new[name])
            except FlowError as e:
                raise FlowError(f"{e}; the state was not changed") from None
        for name, array in new.items():
            self.module._module.set_state(name, array)

    def save(self, path) -> None:
        """Writes the whole state to a safetensors file (with the step
        count and learning rate as metadata)."""
        from .safetensors import save
        save(self._arrays(), os.fspath(path),
             metadata={"flow.steps": str(self.steps), "flow.lr": repr(self.lr)})

    def load(self, path) -> None:
        """Reads a state written by `save` (and its step count); a file
        that is not such a state (a malformed archive, a state of another
        model, values the optimizer cannot have) is refused whole, leaving
        the state as it was."""
        from .safetensors import load, read_metadata
        path = os.fspath(path)
        steps = read_metadata(path).get("flow.steps")
        if steps is not None and not re.fullmatch(r"[0-9]+", steps):
            raise FlowError(
                f"'{path}': the metadata flow.steps is {steps!r}; it is the "
                "number of steps taken, a non-negative integer")
        self.load_state_dict(load(path))
        if steps is not None:
            self.steps = int(steps)

    def parameters(self) -> Dict[str, Any]:
        """The trained parameters, by the model's names, as torch tensors."""
        import torch
        return {n: torch.from_numpy(self.module._module.get_state(n))
                for n in self._parameter_names}

    def copy_to(self, model) -> None:
        """Writes the trained parameters, and the buffers the step updates
        (batch norm's running statistics), into `model` (a torch module with
        the compiled model's names)."""
        import torch
        named = dict(model.named_parameters())
        buffers = dict(model.named_buffers())
        with torch.no_grad():
            for name, value in self.parameters().items():
                if name not in named:
                    raise FlowError(f"the model has no parameter '{name}'")
                named[name].copy_(value)
            for name in self._names:
                if name in buffers and name not in named:
                    buffers[name].copy_(torch.from_numpy(
                        self.module._module.get_state(name)))


def _refuse_cumulative_batch_norm(model):
    """Batch norm with momentum=None in training mode averages its running
    statistics over all steps (a factor of 1/num_batches_tracked, read at
    run time), which torch.export cannot trace: refused by name."""
    import torch
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and \
                m.training and m.track_running_stats and m.momentum is None:
            raise FlowError(
                f"batch norm '{name or type(m).__name__}' has momentum=None "
                "(a cumulative average of the running statistics, whose "
                "factor depends on the step count at run time) in training "
                "mode: give it a momentum (PyTorch's default is 0.1), or "
                "put it in eval mode to keep its statistics frozen")


def _flatten(batch, program):
    """The batch's tensors as numpy arrays (flattened as torch.export
    flattened the example), and whether any was a torch tensor."""
    from torch.utils import _pytree as pytree
    from . import _is_torch_tensor, _to_array
    leaves, spec = pytree.tree_flatten((batch, {}))
    if program.in_spec is not None and spec != program.in_spec:
        raise FlowError("the batch does not have the structure of the "
                        f"example batch (expected {program.in_spec}, got "
                        f"{spec})")
    as_torch = any(_is_torch_tensor(x) for x in leaves)
    return [_to_array(x, i) for i, x in enumerate(leaves)], as_torch


def _numpy(x) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def compile_train(model, loss_fn: Optional[Callable], example_batch, *,
                  optimizer, max_grad_norm: Optional[float] = None,
                  stop_on_nan: bool = True, seed: Optional[int] = None,
                  recompute=None, mesh=None, sbp=None,
                  shard_state: bool = False, timeout: Optional[float] = None,
                  threads: int = 0, mesh_spec: str = "cpu-mpi",
                  auto_parallel: bool = False, memory_limit=None) -> TrainStep:
    """Compiles one training step of `model` and returns it as a TrainStep.

    `loss_fn(model, *batch)` returns the scalar loss of a batch (for
    example `lambda m, x, y: F.cross_entropy(m(x), y)`); with None,
    `model(*batch)` is the loss. A torch criterion (a torch.nn loss such
    as `torch.nn.CrossEntropyLoss()` or `torch.nn.MSELoss()`, or another
    module than the model that does not take the model and the batch) is
    called as a PyTorch training loop calls it: the batch's last tensor is
    the target, `criterion(model(*batch[:-1]), batch[-1])`. Any other loss
    that cannot take (model, *batch) is refused. `example_batch` (a tuple)
    gives the batch's shapes and dtypes; every call takes a batch of the
    same ones.
    `optimizer` is `flow.optim.SGD(...)` or `flow.optim.AdamW(...)`;
    `max_grad_norm` clips the gradients by their global norm first. The
    parameters that require grad are trained; the step starts from their
    current values. With `stop_on_nan` a step whose loss is NaN or
    infinite updates nothing (the compiled update keeps the old state) and
    raises FlowError; without it the step goes on as PyTorch's would.

    The model is compiled in the modes its modules are in: batch norm in
    training mode normalizes by the batch's statistics and updates its
    running statistics (state the step writes); dropout in training mode
    drops, with Flow's counter-based generator (the state
    `rng.seed`, `rng.offset`; the offset advances once per step). `seed`
    (default: `torch.initial_seed()`, so `torch.manual_seed` makes runs
    repeatable) chooses the numbers; the same seed gives the same step on
    any device layout. They are not the numbers torch's generator draws.

    `recompute` trades compute for memory: "elementwise" (every
    element-wise op), or a list of Flow op names (such as "flow.gelu"),
    whose results the backward pass recomputes next to where it reads them
    instead of keeping them from the forward pass.

    `mesh` (an int or a shape like (2, 2)) trains on a device mesh, one
    process per device: run the script under `mpirun -np N`, every process
    making the same calls. By default the batch is split along its first
    dimension over the mesh's first axis and the parameters are replicated
    (data parallel: the gradients are all-reduced). `sbp` places inputs and
    parameters otherwise, by batch position or input name, or by the
    model's parameter name (`{"fc1.weight": flow.sbp.split(0)}`: Megatron
    style tensor parallelism); a tuple of per-axis SBPs on an nd mesh.
    `shard_state=True` splits the optimizer's moments over the first axis
    (ZeRO style: gradients reduce-scattered, each device updating its rows,
    weights all-gathered). Each process keeps only its pieces of the state
    (`step.state_bytes`); `state_dict()`, `save()` and `parameters()` give
    the whole tensors on every process (gathering split ones, so every
    process calls them). `timeout`, `mesh_spec`, `auto_parallel` and
    `memory_limit` are flow.compile's: with `auto_parallel=True` nothing is
    split by default, and the planner chooses the layout of the batch, the
    parameters and the optimizer state that `sbp` does not name.
    """
    from .torch_import import import_program
    from . import compile_mlir, compile_ir
    if not isinstance(optimizer, (_optim.SGD, _optim.AdamW)):
        raise FlowError("optimizer is flow.optim.SGD(...) or "
                        "flow.optim.AdamW(...)")
    if not isinstance(example_batch, tuple):
        example_batch = (example_batch,)
    loss_kind = _loss_kind(model, loss_fn, example_batch)
    if recompute is None:
        recompute = ()
    elif isinstance(recompute, str):
        recompute = (recompute,)
    recompute = tuple(recompute)
    if not all(isinstance(n, str) for n in recompute):
        raise FlowError("recompute is \"elementwise\" or a list of Flow op "
                        "names such as \"flow.gelu\"")
    _refuse_cumulative_batch_norm(model)
    # Tied parameters (GPT-2's embedding and output projection) are one
    # state, named as named_parameters() names it first; the exported
    # program may read it under any of its names.
    first = {id(p): n for n, p in model.named_parameters()}
    trainable = {f"model.{n}": first[id(p)] for n, p in
                 model.named_parameters(remove_duplicate=False)
                 if p.requires_grad}
    if not trainable:
        raise FlowError("the model has no parameter that requires grad")
    function = "train_step"
    placements = None
    if mesh is not None:
        from . import _mesh_shape, sbp as _sbp
        shape = _mesh_shape(mesh)
        split = (_sbp.split(0),) + (_sbp.broadcast,) * (len(shape) - 1)
        # Parameters are named as named_parameters() names them; the
        # step's arguments carry those names.
        placements = (dict(sbp or {}), shape) if auto_parallel else \
            (dict(sbp or {}), shape, split[0] if len(shape) == 1 else split)
    elif sbp:
        raise FlowError("sbp= places inputs and parameters on a mesh: pass "
                        "mesh=")
    elif auto_parallel:
        raise FlowError("auto_parallel=True plans for a mesh: pass mesh=")
    elif shard_state:
        raise FlowError("shard_state splits the optimizer state over a "
                        "mesh: pass mesh=")
    fd, archive = tempfile.mkstemp(prefix="flow-", suffix=".safetensors")
    os.close(fd)
    try:
        program = import_program(
            _loss_module(model, loss_fn, loss_kind), example_batch,
            parameters=archive, function=function, placements=placements,
            training=(trainable,
                      _optim._dictionary(optimizer, max_grad_norm,
                                         skip_nonfinite=stop_on_nan,
                                         shard_state=shard_state),
                      recompute))
        roles = _signature_roles(
            compile_ir(program.text, "flow", mesh_spec=mesh_spec,
                       auto_parallel=auto_parallel,
                       memory_limit=memory_limit), function)
        module = compile_mlir(program.text, threads=threads,
                              parameters=program.archive or "", mesh=mesh,
                              timeout=timeout, mesh_spec=mesh_spec,
                              auto_parallel=auto_parallel,
                              memory_limit=memory_limit)
    finally:
        if os.path.exists(archive):
            os.unlink(archive)
    if "rng.seed" in program.initial_state:
        import torch
        if seed is None:
            seed = torch.initial_seed()
        # As a two's-complement i64 (torch's seeds are unsigned 64-bit).
        program.initial_state["rng.seed"] = np.array(
            int(seed) & (2**64 - 1), np.uint64).view(np.int64)
    return TrainStep(module, program, function, optimizer.lr, roles,
                     stop_on_nan)
