#!/usr/bin/python3
"""Writes examples/models' networks as ONNX files: ResNet-18 at batch 1 and one
BERT-base encoder layer at sequence 128, the same operators as resnet18.yaml
and bert_layer.yaml, built node by node with onnx.helper (Debian's
python3-onnx; nothing downloaded). Weights are graph inputs with fixed shapes,
not initializers, so the files stay a few kilobytes: tune-engine reads the
shapes, not the values.

    examples/models/make_onnx.py OUT_DIR     # writes OUT_DIR/resnet18.onnx, OUT_DIR/bert_layer.onnx
"""
import pathlib
import sys

import onnx
from onnx import TensorProto, helper


class Graph:
    def __init__(self):
        self.nodes, self.inputs, self.count = [], [], 0

    def input(self, name, shape):
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        return name

    def node(self, op, inputs, name=None, **attributes):
        self.count += 1
        out = f"t{self.count}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name or f"{op.lower()}{self.count}", **attributes))
        return out

    def constant(self, values):
        self.count += 1
        out = f"c{self.count}"
        tensor = helper.make_tensor(out, TensorProto.INT64, [len(values)], values)
        self.nodes.append(helper.make_node("Constant", [], [out], value=tensor))
        return out

    def model(self, name, output, output_shape):
        graph = helper.make_graph(self.nodes, name, self.inputs,
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, output_shape)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.checker.check_model(model)
        return model


def resnet18():
    g = Graph()

    def conv(x, name, cin, cout, k, stride, pad):
        w = g.input(name + ".weight", [cout, cin, k, k])
        return g.node("Conv", [x, w], name=name, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)

    x = g.input("image", [1, 3, 224, 224])
    x = g.node("Relu", [conv(x, "conv1", 3, 64, 7, 2, 3)])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for layer, cout in enumerate([64, 128, 256, 512], start=1):
        for block in range(2):
            stride = 2 if layer > 1 and block == 0 else 1
            prefix = f"layer{layer}.{block}"
            y = g.node("Relu", [conv(x, prefix + ".conv1", cin, cout, 3, stride, 1)])
            y = conv(y, prefix + ".conv2", cout, cout, 3, 1, 1)
            shortcut = conv(x, prefix + ".downsample", cin, cout, 1, stride, 0) if stride == 2 else x
            x = g.node("Relu", [g.node("Add", [y, shortcut])])
            cin = cout
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])])
    w = g.input("fc.weight", [1000, 512])  # as PyTorch exports nn.Linear: Gemm with transB
    b = g.input("fc.bias", [1000])
    return g.model("resnet18-b1", g.node("Gemm", [x, w, b], name="fc", transB=1), [1, 1000])


def bert_layer(seq=128, hidden=768, heads=12, ffn=3072):
    g = Graph()
    head = hidden // heads
    x = g.input("hidden_states", [1, seq, hidden])

    def linear(x, name, cin, cout):
        w = g.input(name + ".weight", [cin, cout])  # as PyTorch exports nn.Linear on 3-D input: MatMul + Add
        b = g.input(name + ".bias", [cout])
        return g.node("Add", [g.node("MatMul", [x, w], name=name), b])

    def split_heads(t, perm):
        return g.node("Transpose", [g.node("Reshape", [t, g.constant([1, seq, heads, head])])], perm=perm)

    q = split_heads(linear(x, "attention.query", hidden, hidden), [0, 2, 1, 3])
    k = split_heads(linear(x, "attention.key", hidden, hidden), [0, 2, 3, 1])  # K transposed: [1, 12, 64, 128]
    v = split_heads(linear(x, "attention.value", hidden, hidden), [0, 2, 1, 3])
    scores = g.node("MatMul", [q, k], name="attention.scores")
    probs = g.node("Softmax", [scores], axis=-1)
    context = g.node("MatMul", [probs, v], name="attention.context")
    context = g.node("Reshape", [g.node("Transpose", [context], perm=[0, 2, 1, 3]), g.constant([1, seq, hidden])])
    attention = g.node("Add", [linear(context, "attention.output", hidden, hidden), x])
    middle = g.node("Relu", [linear(attention, "intermediate", hidden, ffn)])
    out = g.node("Add", [linear(middle, "output", ffn, hidden), attention])
    return g.model("bert-base-layer-s128", out, [1, seq, hidden])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(resnet18(), out / "resnet18.onnx")
    onnx.save(bert_layer(), out / "bert_layer.onnx")


if __name__ == "__main__":
    main()
