// gdb's spelling of an instruction. Zydis decodes every x86-64 instruction
// (AVX-512 included) with operand details, and its AT&T formatter writes
// what the instruction is, but in its own words: `jz`, `movzxb`, `cdqe`,
// `call %rax`, `vpcmpb $0x0,...`. gdb (binutils' libopcodes) writes `je`,
// `movzbl`, `cltq`, `call *%rax`, `vpcmpeqb`. Users read our reports beside
// gdb's, so the text follows gdb: on every instruction of libc, libstdc++,
// python3.11 and node the two agree except on x87 forms.
#pragma once

#include <Zydis/Zydis.h>

#include <string>
#include <string_view>

namespace coroner {

// `zydis_text` is ZydisFormatterFormatInstruction's AT&T output for `in`.
std::string GasSpelling(std::string_view zydis_text, const ZydisDecodedInstruction& in,
                        const ZydisDecodedOperand* operands);

}  // namespace coroner
