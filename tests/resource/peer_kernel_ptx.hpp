// The PTX of a kernel the two-GPU tests launch on the peer device, to read
// another device's memory with its SMs (test_peer_gpu.cpp,
// test_peer_ipc_gpu.cpp).
#pragma once

namespace peer_test {

// dst[i] = src[i], a grid-stride loop; `nvcc -arch=compute_75 -ptx` (CUDA
// 13.0) of
//   extern "C" __global__ void read_words(const unsigned* src, unsigned* dst,
//                                         unsigned long long n) {
//     for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x
//          + threadIdx.x; i < n; i += (unsigned long long)gridDim.x * blockDim.x)
//       dst[i] = src[i];
//   }
// A kernel, not a copy: the copy engines reach a peer's memory without
// access, the peer's SMs only with it.
const char kReadWordsPtx[] = R"ptx(.version 9.0
.target sm_75
.address_size 64
.visible .entry read_words(
	.param .u64 read_words_param_0,
	.param .u64 read_words_param_1,
	.param .u64 read_words_param_2
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<18>;
	ld.param.u64 	%rd8, [read_words_param_0];
	ld.param.u64 	%rd9, [read_words_param_1];
	ld.param.u64 	%rd10, [read_words_param_2];
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	cvt.u64.u32 	%rd1, %r2;
	mul.wide.u32 	%rd11, %r1, %r2;
	mov.u32 	%r3, %tid.x;
	cvt.u64.u32 	%rd12, %r3;
	add.s64 	%rd17, %rd11, %rd12;
	setp.ge.u64 	%p1, %rd17, %rd10;
	@%p1 bra 	$L__BB0_3;
	mov.u32 	%r4, %nctaid.x;
	cvt.u64.u32 	%rd13, %r4;
	mul.lo.s64 	%rd3, %rd13, %rd1;
	cvta.to.global.u64 	%rd4, %rd8;
	cvta.to.global.u64 	%rd5, %rd9;
$L__BB0_2:
	shl.b64 	%rd14, %rd17, 2;
	add.s64 	%rd15, %rd4, %rd14;
	ld.global.u32 	%r5, [%rd15];
	add.s64 	%rd16, %rd5, %rd14;
	st.global.u32 	[%rd16], %r5;
	add.s64 	%rd17, %rd17, %rd3;
	setp.lt.u64 	%p2, %rd17, %rd10;
	@%p2 bra 	$L__BB0_2;
$L__BB0_3:
	ret;
}
)ptx";

}  // namespace peer_test
