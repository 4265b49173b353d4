//===- conv_onednn.cpp - ResNet-50's convolutions on oneDNN ---------------===//
//
// Part of the Flow project.
//
// Times every convolution of ResNet-50 (batch N, 224x224, f32) on the
// oneDNN the runtime loads, three ways: on plain layouts (NCHW
// activations, OIHW weights: a drop-in library call on plain buffers), on
// the layouts oneDNN's direct convolutions pick (blocked, e.g. NHWC or
// nChw16c: what Flow's layout pass keeping activations blocked across
// layers gives; weights are reordered once, outside the timing, and
// activations are assumed to be blocked already), and on nChw16c with the
// 3x3 stride-1 convolutions on oneDNN's Winograd kernel where it has one
// (the direct algorithm for the others, and for all where it has none:
// how Flow runs them on such CPUs). The figures decide how Flow's f32
// convolutions should run; bench/conv.py builds this file (g++ -fopenmp
// ... -ldnnl) and prints them next to Flow's own.
//
//   conv_onednn BATCH THREADS ITERATIONS  ->  one line per way:
//   "<plain|blocked|winograd> <total ms per forward pass>"
//   (CONV_VERBOSE=1 adds each convolution's time and oneDNN kernel.)
//
//===----------------------------------------------------------------------===//

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Conv {
  int in, out, kernel, stride, size; // size: input height = width
  int count;                         // how many times ResNet-50 has it
};

/// ResNet-50 (torchvision, stride on the 3x3) at 224x224.
const std::vector<Conv> kConvs = {
    {3, 64, 7, 2, 224, 1},
    // layer1 (56x56)
    {64, 64, 1, 1, 56, 1},
    {64, 64, 3, 1, 56, 3},
    {64, 256, 1, 1, 56, 4},
    {256, 64, 1, 1, 56, 2},
    // layer2 (56 -> 28)
    {256, 128, 1, 1, 56, 1},
    {128, 128, 3, 2, 56, 1},
    {128, 512, 1, 1, 28, 4},
    {256, 512, 1, 2, 56, 1},
    {512, 128, 1, 1, 28, 3},
    {128, 128, 3, 1, 28, 3},
    // layer3 (28 -> 14)
    {512, 256, 1, 1, 28, 1},
    {256, 256, 3, 2, 28, 1},
    {256, 1024, 1, 1, 14, 6},
    {512, 1024, 1, 2, 28, 1},
    {1024, 256, 1, 1, 14, 5},
    {256, 256, 3, 1, 14, 5},
    // layer4 (14 -> 7)
    {1024, 512, 1, 1, 14, 1},
    {512, 512, 3, 2, 14, 1},
    {512, 2048, 1, 1, 7, 3},
    {1024, 2048, 1, 2, 14, 1},
    {2048, 512, 1, 1, 7, 2},
    {512, 512, 3, 1, 7, 2},
};

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

enum class Way { Plain, Blocked, Winograd };
const char *name(Way way) {
  return way == Way::Plain     ? "plain"
         : way == Way::Blocked ? "blocked"
                               : "winograd";
}

/// The primitive for \p c one way; Winograd falls back to the direct
/// algorithm on the same layouts where oneDNN has no Winograd kernel.
dnnl::convolution_forward::primitive_desc
describe(const Conv &c, int batch, Way way, dnnl::engine &engine) {
  int pad = c.kernel / 2;
  int outSize = (c.size + 2 * pad - c.kernel) / c.stride + 1;
  dnnl::memory::dims src = {batch, c.in, c.size, c.size};
  dnnl::memory::dims wei = {c.out, c.in, c.kernel, c.kernel};
  dnnl::memory::dims bias = {c.out};
  dnnl::memory::dims dst = {batch, c.out, outSize, outSize};
  // The RGB input (3 channels) is left to oneDNN in every blocked way.
  auto md = [&](const dnnl::memory::dims &d, tag plain, bool input) {
    tag chosen = way == Way::Plain                         ? plain
                 : way == Way::Blocked || (input && c.in % 16) ? tag::any
                                                              : tag::nChw16c;
    return dnnl::memory::desc(d, dt::f32, chosen);
  };
  auto make = [&](dnnl::algorithm algorithm) {
    dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, algorithm, md(src, tag::nchw, true),
        dnnl::memory::desc(wei, dt::f32,
                           way == Way::Plain ? tag::oihw : tag::any),
        dnnl::memory::desc(bias, dt::f32, tag::x), md(dst, tag::nchw, false),
        {c.stride, c.stride}, {pad, pad}, {pad, pad});
    return dnnl::convolution_forward::primitive_desc(desc, engine);
  };
  if (way == Way::Winograd && c.kernel == 3 && c.stride == 1) {
    try {
      return make(dnnl::algorithm::convolution_winograd);
    } catch (const dnnl::error &) {
    }
  }
  return make(dnnl::algorithm::convolution_direct);
}

/// Median ms of one convolution, one way.
double timeConv(const Conv &c, int batch, Way way, int iterations,
                dnnl::engine &engine, dnnl::stream &stream) {
  dnnl::convolution_forward::primitive_desc pd =
      describe(c, batch, way, engine);
  dnnl::memory srcMem(pd.src_desc(), engine), weiMem(pd.weights_desc(), engine),
      biasMem(pd.bias_desc(), engine), dstMem(pd.dst_desc(), engine);
  for (dnnl::memory *m : {&srcMem, &weiMem, &biasMem}) {
    float *p = static_cast<float *>(m->get_data_handle());
    size_t n = m->get_desc().get_size() / sizeof(float);
    for (size_t i = 0; i < n; ++i)
      p[i] = 0.01f * float(i % 97);
  }
  dnnl::convolution_forward conv(pd);
  std::vector<double> times;
  for (int i = 0; i < iterations + 2; ++i) {
    auto start = std::chrono::steady_clock::now();
    conv.execute(stream, {{DNNL_ARG_SRC, srcMem},
                          {DNNL_ARG_WEIGHTS, weiMem},
                          {DNNL_ARG_BIAS, biasMem},
                          {DNNL_ARG_DST, dstMem}});
    stream.wait();
    auto end = std::chrono::steady_clock::now();
    if (i >= 2)
      times.push_back(
          std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(times.begin(), times.end());
  if (std::getenv("CONV_VERBOSE"))
    std::fprintf(stderr, "%s %dx%d k%d s%d @%d: %.3f ms (%s)\n",
                 name(way), c.in, c.out, c.kernel,
                 c.stride, c.size, times[times.size() / 2],
                 pd.impl_info_str());
  return times[times.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: conv_onednn BATCH THREADS ITERATIONS\n");
    return 2;
  }
  int batch = std::atoi(argv[1]), threads = std::atoi(argv[2]),
      iterations = std::atoi(argv[3]);
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  for (Way way : {Way::Plain, Way::Blocked, Way::Winograd}) {
    double total = 0;
    for (const Conv &c : kConvs)
      total += c.count * timeConv(c, batch, way, iterations, engine, stream);
    std::printf("%s %.2f\n", name(way), total);
  }
  return 0;
}
