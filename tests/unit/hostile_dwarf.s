# A function whose hand-written DWARF describes two hostile locals: `w`, a
# struct whose member `b` lies at offset 0xfffffffffffffff8 (offset + size
# wraps to 0), and `l`, a struct whose two members are the struct itself at
# offset 0 (2^20 values and more, 20 levels deep). crash_here loads from
# address 0: SIGSEGV with both locals live. For hostile_input_test.
	.text
	.globl	crash_here
	.type	crash_here, @function
crash_here:
.Lfunc_begin:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset 6, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register 6
	subq	$48, %rsp
	movq	$0x1111, -16(%rbp)
	movq	$0x2222, -8(%rbp)
	movq	$0x3333, -32(%rbp)
	movq	$0x4444, -24(%rbp)
	xorl	%eax, %eax
	movl	(%rax), %eax
	leave
	.cfi_def_cfa 7, 8
	ret
	.cfi_endproc
.Lfunc_end:
	.size	crash_here, .-crash_here

	.section	.debug_abbrev,"",@progbits
.Labbrev:
	.uleb128 1	# compile unit
	.uleb128 0x11
	.byte	1
	.uleb128 0x25	# DW_AT_producer
	.uleb128 0x08	# DW_FORM_string
	.uleb128 0x13	# DW_AT_language
	.uleb128 0x0b	# DW_FORM_data1
	.uleb128 0x03	# DW_AT_name
	.uleb128 0x08
	.uleb128 0x11	# DW_AT_low_pc
	.uleb128 0x01	# DW_FORM_addr
	.uleb128 0x12	# DW_AT_high_pc
	.uleb128 0x07	# DW_FORM_data8
	.byte	0, 0
	.uleb128 2	# subprogram
	.uleb128 0x2e
	.byte	1
	.uleb128 0x03
	.uleb128 0x08
	.uleb128 0x3f	# DW_AT_external
	.uleb128 0x19	# DW_FORM_flag_present
	.uleb128 0x11
	.uleb128 0x01
	.uleb128 0x12
	.uleb128 0x07
	.uleb128 0x40	# DW_AT_frame_base
	.uleb128 0x18	# DW_FORM_exprloc
	.byte	0, 0
	.uleb128 3	# variable
	.uleb128 0x34
	.byte	0
	.uleb128 0x03
	.uleb128 0x08
	.uleb128 0x49	# DW_AT_type
	.uleb128 0x13	# DW_FORM_ref4
	.uleb128 0x02	# DW_AT_location
	.uleb128 0x18
	.byte	0, 0
	.uleb128 4	# structure type
	.uleb128 0x13
	.byte	1
	.uleb128 0x03
	.uleb128 0x08
	.uleb128 0x0b	# DW_AT_byte_size
	.uleb128 0x0b
	.byte	0, 0
	.uleb128 5	# member
	.uleb128 0x0d
	.byte	0
	.uleb128 0x03
	.uleb128 0x08
	.uleb128 0x49
	.uleb128 0x13
	.uleb128 0x38	# DW_AT_data_member_location
	.uleb128 0x07	# DW_FORM_data8
	.byte	0, 0
	.uleb128 6	# base type
	.uleb128 0x24
	.byte	0
	.uleb128 0x03
	.uleb128 0x08
	.uleb128 0x3e	# DW_AT_encoding
	.uleb128 0x0b
	.uleb128 0x0b
	.uleb128 0x0b
	.byte	0, 0
	.byte	0

	.section	.debug_info,"",@progbits
.Lcu:
	.long	.Lcu_end - .Lcu_version
.Lcu_version:
	.value	4
	.long	.Labbrev
	.byte	8
	.uleb128 1
	.string	"hand-written DWARF"
	.byte	0x0c	# DW_LANG_C99
	.string	"hostile_dwarf.s"
	.quad	.Lfunc_begin
	.quad	.Lfunc_end - .Lfunc_begin
.Ltype_long:
	.uleb128 6
	.string	"long"
	.byte	5	# DW_ATE_signed
	.byte	8
# A member whose offset wraps: 0xfffffffffffffff8 + 8 is 0.
.Ltype_wrap:
	.uleb128 4
	.string	"wrap"
	.byte	16
	.uleb128 5
	.string	"a"
	.long	.Ltype_long - .Lcu
	.quad	0
	.uleb128 5
	.string	"b"
	.long	.Ltype_long - .Lcu
	.quad	0xfffffffffffffff8
	.byte	0
# A struct whose two members are the struct itself, at offset 0.
.Ltype_loop:
	.uleb128 4
	.string	"loop"
	.byte	16
	.uleb128 5
	.string	"left"
	.long	.Ltype_loop - .Lcu
	.quad	0
	.uleb128 5
	.string	"right"
	.long	.Ltype_loop - .Lcu
	.quad	0
	.byte	0
	.uleb128 2
	.string	"crash_here"
	.quad	.Lfunc_begin
	.quad	.Lfunc_end - .Lfunc_begin
	.uleb128 2	# DW_OP_breg6 0: the frame base is rbp
	.byte	0x76, 0
	.uleb128 3
	.string	"w"
	.long	.Ltype_wrap - .Lcu
	.uleb128 2	# DW_OP_fbreg -16
	.byte	0x91, 0x70
	.uleb128 3
	.string	"l"
	.long	.Ltype_loop - .Lcu
	.uleb128 2	# DW_OP_fbreg -32
	.byte	0x91, 0x60
	.byte	0
	.byte	0
.Lcu_end:

	.section	.debug_aranges,"",@progbits
	.long	.Laranges_end - .Laranges_version
.Laranges_version:
	.value	2
	.long	.Lcu
	.byte	8, 0
	.long	0	# pad to 16
	.quad	.Lfunc_begin
	.quad	.Lfunc_end - .Lfunc_begin
	.quad	0, 0
.Laranges_end:
	.section	.note.GNU-stack,"",@progbits
