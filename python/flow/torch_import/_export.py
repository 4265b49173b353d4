"""Exporting a module with torch.export and preparing its graph for the
importer: core-ATen decompositions, batch norms folded into convolutions,
in-place ops as their functional twins, and the check that a program can
be imported as exported."""

from __future__ import annotations

import operator

from ._core import _HANDLERS, _op_key


def _export(module, args=(), kwargs=None, train=False, dynamic=None):
    """torch.export in eval mode (ATen ops as exported, not decomposed);
    with `train`, in the modes the module and its submodules are in (a
    training step drops out where the model is in training mode). With
    `dynamic` ({input: {dimension: (symbol, min, max)}}), those dimensions
    are exported as symbols."""
    import torch
    if isinstance(module, torch.export.ExportedProgram):
        ep = module
    else:
        if not isinstance(args, tuple):
            args = (args,)
        # Exported in eval mode; the caller's module and each of its
        # submodules keep their own modes (a wrapper in training mode around
        # a model in eval mode must not leave the model training).
        modes = ([(m, m.training) for m in module.modules()]
                 if isinstance(module, torch.nn.Module) else [])
        if isinstance(module, torch.nn.Module) and not train:
            module.eval()
        _register_cache_pytrees(module)
        try:
            with torch.no_grad():
                shapes = None
                if dynamic:
                    from ._dynamic import dynamic_shapes
                    shapes = dynamic_shapes(module, args, kwargs, dynamic)
                ep = torch.export.export(module, args, kwargs=kwargs or {},
                                         dynamic_shapes=shapes)
        finally:
            for m, training in modes:
                m.training = training
    return ep


def _decompose(ep):
    """`ep` decomposed to core ATen."""
    import torch
    # Attention stays one op: Flow lowers it itself (and PyTorch's own
    # decomposition of it can produce views the rest of the table rejects).
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if "scaled_dot_product" in str(op):
            del table[op]
    return ep.run_decompositions(table)


def _register_cache_pytrees(module) -> None:
    """Lets torch.export flatten the cache objects a Hugging Face model
    returns by default (a decoder's DynamicCache of keys and values), so the
    model compiles with its default config, as torch.compile takes it. The
    registration is transformers' own, where this version has one; the
    compiled model then returns the same cache type, rebuilt from Flow's
    tensors."""
    cls = type(module)
    if not cls.__module__.startswith("transformers."):
        return
    try:
        from transformers.exporters.exporter_dynamo import \
            register_cache_pytrees_for_model
    except ImportError:
        register_cache_pytrees_for_model = None
    if register_cache_pytrees_for_model is not None:
        register_cache_pytrees_for_model(module)
        return
    try:
        from transformers.integrations.executorch import \
            register_dynamic_cache_export_support
    except ImportError:
        return
    register_dynamic_cache_export_support()


def _fold_batch_norms(ep) -> int:
    """Rewrites convolution -> batch norm (inference) into one convolution
    whose weight and bias absorb the normalization, when the convolution's
    weight and the statistics are constants. The arithmetic is inserted as
    graph nodes on constants, which the importer then computes. Returns how
    many were folded."""
    import torch
    aten = torch.ops.aten
    constant = {spec.arg.name for spec in ep.graph_signature.input_specs
                if spec.kind.name in ("PARAMETER", "BUFFER",
                                      "CONSTANT_TENSOR")}
    graph = ep.graph

    def is_constant(n):
        return n is None or (isinstance(n, torch.fx.Node) and
                             n.op == "placeholder" and n.name in constant)

    folded = 0
    for bn in list(graph.nodes):
        # Decomposed: convolution -> _native_batch_norm_legit_no_training
        # (results taken by getitem); as exported: conv2d -> batch_norm
        # (one result, training False).
        exported = bn.target == aten.batch_norm.default
        if exported:
            if len(bn.args) < 8 or bn.args[5] or bn.kwargs:
                continue
            conv_op = aten.conv2d.default
        elif bn.target == aten._native_batch_norm_legit_no_training.default:
            conv_op = aten.convolution.default
        else:
            continue
        conv, gamma, beta, mean, var = bn.args[:5]
        eps = bn.args[7] if exported else bn.args[6]
        if not (isinstance(conv, torch.fx.Node) and conv.target == conv_op
                and len(conv.users) == 1 and not conv.kwargs and
                (exported or not conv.args[6])):
            continue
        weight = conv.args[1]
        bias = conv.args[2] if len(conv.args) > 2 else None
        if not all(is_constant(n) for n in (weight, bias, gamma, beta, mean,
                                            var)) or mean is None:
            continue
        getitems = [] if exported else list(bn.users)
        if any(u.target is not operator.getitem or u.args[1] != 0
               for u in getitems):
            continue
        with graph.inserting_before(conv):
            def call(op, *args):
                return graph.call_function(op, args)
            scale = call(aten.rsqrt.default, call(aten.add.Tensor, var, eps))
            if gamma is not None:
                scale = call(aten.mul.Tensor, scale, gamma)
            w = call(aten.mul.Tensor, weight,
                     call(aten.view.default, scale, [-1, 1, 1, 1]))
            shift = call(aten.neg.default, mean)
            if bias is not None:
                shift = call(aten.add.Tensor, shift, bias)
            b = call(aten.mul.Tensor, shift, scale)
            if beta is not None:
                b = call(aten.add.Tensor, b, beta)
            args = list(conv.args) + [None] * (3 - len(conv.args))
            args[1], args[2] = w, b
            new_conv = graph.call_function(conv_op, tuple(args))
        new_conv.meta = dict(conv.meta)
        new_conv.meta["val"] = bn.meta["val"] if exported else \
            bn.meta["val"][0]
        if exported:
            bn.replace_all_uses_with(new_conv)
        for g in getitems:
            g.replace_all_uses_with(new_conv)
            graph.erase_node(g)
        graph.erase_node(bn)
        graph.erase_node(conv)
        folded += 1
    return folded


def _functional_twin(target):
    """The functional op of an in-place ATen op (aten.relu_.default ->
    aten.relu.default), or None."""
    import torch
    name = target._schema.name  # "aten::relu_"
    namespace, _, op = name.partition("::")
    if not op.endswith("_") or op.endswith("__"):
        return None
    packet = getattr(getattr(torch.ops, namespace, None), op[:-1], None)
    return getattr(packet, target._overloadname, None) if packet else None


def _in_place_as_functional(ep):
    """The in-place ops of `ep` that can be imported as their functional
    twins (a list), or None if some op mutates in a way that cannot.

    An in-place op can when it mutates only its first argument, and that
    argument is an intermediate result (not an input, parameter or buffer,
    and not a view of another tensor) that nothing reads after the op: then
    every reader sees the value it would see in eager, whether the op wrote
    over it or not. Chains (add_ then relu_ on its result, as in a ResNet
    block) follow the same storage back to the op that made it."""
    import torch
    position = {n: i for i, n in enumerate(ep.graph.nodes)}
    approved = {}  # in-place node -> the node that made its storage

    def is_view(target):
        return isinstance(target, torch._ops.OpOverload) and any(
            r.alias_info is not None for r in target._schema.returns)

    for node in ep.graph.nodes:
        target = node.target
        if node.op != "call_function" or \
                not isinstance(target, torch._ops.OpOverload) or \
                not target._schema.is_mutable:
            continue
        schema = target._schema
        twin = _functional_twin(target)
        writes = [a.alias_info is not None and a.alias_info.is_write
                  for a in schema.arguments]
        if twin is None or not writes or not writes[0] or any(writes[1:]) \
                or not node.args or not isinstance(node.args[0],
                                                   torch.fx.Node):
            return None
        x = node.args[0]
        root = approved.get(x, x)
        if root.op != "call_function" or root.target is operator.getitem or \
                not isinstance(root.target, torch._ops.OpOverload) or \
                root.target._schema.is_mutable or is_view(root.target):
            return None
        chain = {root} | {n for n, r in approved.items() if r is root}
        for held in chain:
            for user in held.users:
                if user is node or user in chain:
                    continue
                if position[user] > position[node] or is_view(user.target):
                    return None
        approved[node] = root
    return list(approved)


def _imports_as_exported(ep) -> bool:
    """True if Flow can import `ep` as torch.export left it, without the
    core-ATen decompositions (which retrace the whole program: about 2 s of
    BERT-base's 5 s compile): no op mutates anything (the decompositions
    would make those functional), and every op that depends on a user
    input has a handler (the others are computed at import time)."""
    import torch
    in_place = _in_place_as_functional(ep)
    if in_place is None:
        return False
    user_inputs = set(ep.graph_signature.user_inputs)
    live = set()  # nodes that depend on a user input
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            if node.name in user_inputs:
                live.add(node)
            continue
        if node.op != "call_function":
            continue
        target = node.target
        depends = any(a in live for a in node.all_input_nodes)
        if depends:
            live.add(node)
        if target is operator.getitem:
            continue
        if not isinstance(target, torch._ops.OpOverload):
            return False
        if node in in_place:
            target = _functional_twin(target)
        if depends and _op_key(target) not in _HANDLERS:
            return False
    return True
