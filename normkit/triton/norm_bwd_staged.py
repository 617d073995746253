"""RMSNorm's and LayerNorm's backward with their rows staged in shared memory, written in Gluon (Triton's explicit
dialect).

cuDNN's RMSNorm backward is fastest at 4096 x 13312 fp16 (0.85 of its time for normkit's split rows in round 65) with
one persistent program a SM that stages each row of x and dy in shared memory by the TMA, two rows in flight, and
keeps the weights and float32 dW there too (GPU run 541). Triton cannot place a tensor in shared memory, and its
tiles are powers of two: a row of 13312 columns is 16384's tile, a fifth of it masked. Gluon can: here a row of N
columns is viewed as N / 256 rows of 256 (the call's rows contiguous) and cut into at most three parts of powers of
two (``parts``: 13312 = 52 x 256 = (32 + 16 + 4) x 256), each part its own buffer, TMA descriptor and register layout,
so every thread loads 16 bytes at a time where the part allows, and no lane is past the row but where N / 256 has
more than three binary digits: 13824 = 54 x 256 is cut 32 + 16 + 8, its last part padded by 2 rows of 256 (the next
row's, loaded and masked).

One program a SM takes rows ``pid, pid + programs, ...``: its compute warps (``_compute``) and one load warp
(``_loader``, ``gl.warp_specialize``). The load warp copies each row into a free stage, two rows in flight (three in
rows of at most 7680 columns: ``config.staged_stages``). Per row
the compute warps wait for its stage; pass one reads x, dy and the weights from shared memory for ``sum(w dy x)``;
pass two reads them again, stores dx from registers and adds ``dy x rstd`` to dW (float32, in registers across the
loop: 64 a thread at most); then they release the stage to the load warp (an mbarrier). rstd is loaded a row ahead.
Each program writes its dW partial, and ``ops._sum_partials`` adds them in a fixed order, as for the other
backwards.

LayerNorm's backward (``IS_RMS`` false) is the same loop with the mean loaded a row ahead beside rstd: pass one sums
``xhat w dy`` and ``w dy`` (xhat = (x - mean) rstd), pass two stores dx = (w dy - (xhat c1 + c2)) rstd and adds
``dy xhat`` to dW (in a padded part both xhat and w dy are set to 0 past the row: the next row's values there may
not be finite). dB (``HAS_DBIAS``), the sum of dy, is kept either by the compute warps beside dW (in registers, the
last parts' in shared memory where ``DB_SHARED`` says), or by
``DB_WARPS`` warps of its own (``_db_sum``, a third partition) that read each stage's dy and hold dB, so that the
compute warps hold dW alone; a stage is then free once both have released it. Its partial is ``PARTIAL``'s second
half. ``DB_REGISTERS`` splits the register file: with 4 dB warps at 112 registers the 8 compute warps get 184.

Round 69 (H200, GPU runs 546-550, 4096 x N fp16, in turns against the rule before): one TMA copy a part rather
than one a box of the smallest part made it fast (13312, the same variant: 126.9 -> 99.5 us; with dW in registers
93.7, the rule 106.9); 8 warps beat 16 (128 registers a thread: x0.89-1.07 of the rule); holding x and dy in
registers between the passes, or the weights across the loop, ran slower at 12800-13312 and 2.5% faster at 14336
(not taken). The same kernel with LayerNorm's mean and second row sum and dB's sums ran x0.80-0.95 of LayerNorm's
split rows, and is not here.

Round 70 (GPU runs 551-557). Rows whose N / 256 has four binary digits are padded to three parts (``parts``): at
4096 x 13824 fp16, 32 + 16 + 8 ran x1.10 of 32 + 16 + 4 + 2 with dW in shared memory and x1.21 with dW in registers
(run 551), 14848's 32 + 16 + 16 x1.04 of its four parts. With at most three parts, dW in registers beat dW in shared
memory at every width (14336 x1.07, 14848 x1.12, 15360 x1.10; run 554), so it is always there. A sum of each part's
rows of 256 in shared memory, one barrier a row rather than two a part, ran level (x0.99-1.00, run 551). The launch is
``ops.STAGED_BWD``, a ``launch.Launcher`` that keeps the descriptors encoded: Gluon's own launch path took 160-210 us
of host time a call at 2048 x 12800-14336, the split rows 43 (run 551); with the kept descriptors 62-88 (run 554).

Round 71 (GPU runs 558-564). A padded part's mask is its offsets below the row's end (14848-15872 compile to 240
registers, no stack; level with the form before). Not taken: 16 warps (x0.988-1.003 of 8), a third stage, a warp that
only issues the TMA copies (``gl.warp_specialize``: x1.003-1.026), cache hints on dx's stores (level). Alone after a
clean L2 the kernel runs 80.6 us at 4096 x 13312 fp16 against cuDNN's 77.6; after its own call's lines in L2, 90.7
against 81.6 (run 564): what it is about those lines is not read yet.

Round 72 (GPU runs 565-572). Each dW partial is stored from ``_partial_layout`` (4 float32 a thread): in the layout of a
part of 8 rows of 256 or more a thread's 8 columns are 32 bytes, stored 16 at a time, so every sector there was written
twice (Nsight Compute, 4096 x 13312 fp16: 202,752 excessive sectors, 5% of the kernel's; none now). In turns against the
kernel before (run 571): x0.993-1.035 at 4096 x 12800-15872 fp16 (13312 x1.035), x1.017 / x1.022 at 2048 x 13312 /
15872, x1.002 at 32768 x 13312 bf16. Nsight Compute's bytes (run 565): this kernel and cuDNN's move the same DRAM bytes
(218 MB read; 116 MB written after their own call, 94-96 after a clean L2), so the slower run after its own call is not
more traffic. Not taken: dx as ``w (dy rstd) - k x`` (20 fewer instructions a row: x0.989-1.010, run 567), a grid
balanced over the rows (128 programs of 32 rows at 4096: x0.985-1.016, run 568), the dW sum as a programmatic dependent
launch (x0.988-1.023, run 565), and LayerNorm's backward with dB in this kernel (8 warps: x0.89-0.92 of the split rows
at 12800-15872, x1.016 / x1.026 at 10752 / 11776; 16 warps spill, x0.61-0.90; run 566).

Round 73 (GPU runs 573-579). The TMA copies are issued by a load warp (``_loader``; round 71 probed it at x1.003-1.026,
before the dW partial was coalesced). In turns against round 72's kernel (run 575): x1.005-1.041 at 4096 x 12800-15872
fp16 (13312 x1.006, 14336-15360 x1.027-1.041), x1.008-1.022 at 2048 rows, x1.007 at 32768 x 13312 bf16; 16 compute warps
with it ran x0.965-1.041 of 8 (runs 573-574). Two widths moved here from the TMA head and tail tiles: 12288 (32 + 16:
x1.007-1.038, run 575) and 10240 (32 + 8: x0.981-1.036, runs 578-579). At 9728, 10752, 11264 and 11776 it ran
x0.961-1.034 of the head and tail tiles (run 578) and is not taken. Beside cuDNN at 4096 fp16 (runs 576, 579): 0.984 of
its speed at 12288, 0.980 at 13312, 1.011-1.131 at 10240 and 12800-14848, 11.9-12.1 at 15360-15872.

Round 74 (GPU run 582). With the load warp, 3 stages, 16 compute warps, or both, ran slower than 2 stages of 8 warps
but for 3 stages at 4096 x 13312 (0.1% faster): the kernel's speed over theirs x0.999-1.079 at 4096 x 10240-13312 fp16
and x1.001-1.026 at 32768 x 12288 / 13312 bf16 (``bench.ab``). 12288 and 13312 stay behind cuDNN.

Round 75 (GPU runs 587-591). LayerNorm's backward with dB in this kernel (round 74's probe), against the split rows
at 4096 x N fp16 in turns (run 587): dB in 4 warps of its own x1.115 / 1.068 / 1.177 at 10752 / 11264 / 11776, in the
compute warps x1.138 at 12288 (4 warps of its own x1.038); every form slower at 10240, 12800 and 13312 (x0.78-0.99);
dB in shared memory x0.89-0.95 at 10752-11776, x1.03 at 12288. Taken at 10752-12288 (``config.STAGED_LN_BWD_N``;
12800-13824 too since round 94).
At 11264 the dB warps' 112 registers left the compute warps spilling 16-24 bytes, and zero-centered gamma ran x0.97 of
the split rows (run 589); at 104 registers nothing spills and it ran x1.03-1.11 of 112 (run 590). As landed, against the
rule before (``bench.ab``, runs 588-591): x1.04-1.16 at 4096 rows fp16 (zero-centered gamma included), x1.02-1.12 at
2048, x1.12-1.24 at 32768 bf16 (97% of copy at 12288). Beside cuDNN at 4096 fp16 (run 589): 1.18 / 1.22 of its speed at
11776 / 12288, 2.0-2.2 at 10752 / 11264. RMSNorm's path is the same code (x0.998 / x1.020 at 12288 / 13312, run 589).

Round 76 (GPU runs 593-597). LayerNorm's backward without dB (a LayerNorm without a bias) takes this kernel at every
multiple of 512 from 10240 to 15872 (``config.STAGED_LN_NO_DB_BWD_N``): x1.05-1.24 of the rule before at 4096 rows fp16,
x1.01-1.16 at 2048, x1.08-1.27 at 32768 bf16 (run 595). Without dB its compute warps hold dW alone, as RMSNorm's do,
and compile with no stack at every width. The padded part's masking (round 75's last fix) and the partials' store in one
helper (``_store_partials``: the same PTX for sm_90 but for its line information) ran level with round 75's kernel
(x0.994-1.004 at 4096 x 10752-12288 fp16, x0.999 for RMSNorm at 13312; run 593).

Round 77 (GPU runs 601-604b). LayerNorm's backward without dB at 12800-14336 columns (49-56 rows of 256) is cut into
parts of 32 + 8 + 16 rows, the last padded, not into its binary digits 32 + 16 + 2-8 (``parts``' ``second_of_8``): in
turns against round 76 (run 603, ``bench.ab``) x1.122-1.129 at 4096 rows fp16, x1.141 at 2048 x 12800, x1.125 at 32768
x 13824 bf16; 1.19-1.27x cuDNN at 4096 fp16 (80-83% of copy). Forced forms that did not gain are listed at ``parts``.

Round 78 (GPU runs 605-609). RMSNorm's short rows (5632-7680 columns, 22-30 rows of 256: 11-15 KB of x a row in
fp16) take this kernel at 4 compute warps and 3 rows in flight. Forced there at 8 warps and 2 stages it ran x0.93-0.95
of the whole-row kernel (a row in 8192's tile, 16 warps), at 3 stages x0.98-1.07, at 4 warps and 3 stages
x1.004-1.092 (4096 rows fp16, runs 605-606). Two rows in flight are 45-60 KB of loads a SM at these widths, against
106 KB at 13312; why 4 compute warps gain over 8 is not read. Two programs a SM (``maxnreg`` 128: 232 registers a
compute thread) ran x0.94-1.03 of the rule at 4096 x 4096-6656 (run 609): not taken. LayerNorm's 12288 without dB in
fp16 is cut 32 + 8 + 8 (``parts``' ``fp16``).

Round 79 (GPU runs 611-618). RMSNorm's 5632-6656 take it from 2560 rows (x1.01-1.08 of the whole-row kernel at
2560-3584 rows in turns, but 3072 x 5632, where it runs at one of two speeds, x0.99); 7168-7680 from 4096 as before.
At 8192 (one part of 32 rows of 256) 8 warps ran level with the whole-row kernel (x0.99-1.02), 4 warps x0.82-0.86.
The kernel runs at one of two speeds about 5% apart from one timing to the next at the short rows (runs 616-618: 3072 x
5632 fp16 39.0 or 41.0 us, 4096 x 6144 47.3 or 48.4; the whole-row kernel within 2%). Round 80 found those speeds the
timer's, not the kernel's: cuDNN's backward and a plain copy swung from timing to timing too, and a GPU sleep after
every other timed call holds them all still (``bench.timing.SETTLE_US``, H200 runs 624-631).

Round 93 (GPU runs 707-708). LayerNorm's pass one took each part's two sums (``xhat w dy``, ``w dy``) across the warps
one after the other, each exchange through shared memory behind three CTA barriers: up to 18 a row at three parts. Now
each part's sums are a warp's each (``_warp_sums``: shuffles only), added over the parts in registers and taken across
the warps once a row, as a pair (``_sum_pair``): 27 barriers in the kernel against 42 at 13312 without dB (sm_90). In
turns against round 91's kernel (``bench.ab``): x1.080 / x1.094 at 4096 x 10752 fp16 with / without dB, x1.068 /
x1.080 at 2048 rows, x1.000-1.016 at 4096 x 12288-15872, level at 32768 x 10752 bf16. RMSNorm's one sum a part taken
the same way ran x0.973-0.987 at 4096 x 12288, 15360 and 15872 (x0.999-1.009 at 10752-14336, x1.054 at 5632) and
keeps a reduction a part (``_part_sum``).

Round 94 (H200, GPU runs 710-713, ``bench.ab`` against round 93's rules). With those sums, LayerNorm's backward with dB
in the compute warps at 12800-13824 (taken: ``config.STAGED_LN_BWD_N``) ran x1.22 / x1.14 / x1.04-1.12 of the split
rows at 4096 x 12800 / 13312 / 13824 (x1.28 / x1.19 / x1.08-1.15 at 32768 rows), but x0.96-1.03 at 14336 and
x0.93-0.97 at 14848-15872 at 4096 fp16 (not taken). The masked split staged backward's dy masked in its stage by a
partition of 4 warps of its own as each row landed, the compute warps then running the plain step, ran x0.970 /
x0.976 at 32768 x 32768 / 16384 (bf16 x, float32 weights): not taken.

Round 95 (H200, GPU runs 719-721). Nsight Compute's warp sampling of the masked split staged backward (run 719, 8192
x 32768, bf16 x, float32 weights) put 38% of its samples at CTA barriers: 25% in the warps of the load warp's group
that have no work (they wait there for the whole kernel), 11% in the compute warps at the barrier before a row's
stage is released (one thread arrives, once all have read it). The stage released as soon as x and dy are read,
before dx is worked out and stored, ran x0.956 / x0.938 at 32768 x 16384 / 32768 (LayerNorm's without the mask
x0.953 / x0.912; RMSNorm's x0.962 / x1.015): not taken.

Round 96 (H200, GPU runs 726-728). The split staged backward's row sums a warp each (``WARP_SUMS``): each compute warp
sums its rows of the slice within the warp (``_warp_sums``) and publishes its pair to a slot of its own (a row's slots
``PARTS`` x warps), and every warp fetches all the row's slots and adds them with shuffles (``_warp_row_means``), so
no exchange between the compute warps stands in a step (sm_90: 2 CTA barriers a row in the loop, 5 before). LayerNorm's
in turns against round 95's: with dB x1.075 / x1.116 at 32768 x 16384 / 32768 (92 / 95% of the copy), x1.084 at 8192
x 16384, x1.132 at 4096 x 32768 fp16; without dB x1.070 / x1.025; the masked backward x1.107 at 32768 x 16384 (its
time 1.030x the plain backward's). Not taken (``config.split_staged_warp_sums``): RMSNorm's (x0.965-0.988), the masked
backward at 32768 (x0.981-0.991), LayerNorm's without dB at 65536 (x1.000). The masked backward's dy held in registers
from pass one to pass two (its bits tested once: 84 register moves a row for the rotation) ran x0.950-0.964, written
back into its stage (a CTA barrier more a row) x0.916-0.935: not taken.

Round 98 (H200, GPU runs 733-736). The masked backward with dB at 32768 and 65536 runs one row ahead, fetches this
row's sums before it publishes the next row's (``FETCH_FIRST``) and publishes a warp's sums each
(``config.SPLIT_STAGED_MASKED_ONE_AHEAD_N``): x1.113 / x1.121 at 32768 x 32768 / 65536, its time 1.041-1.045x the
plain backward's at 32768 x 32768 (1.16x before). In Nsight Compute (run 734, 32768 x 32768) the rule's masked form
before it spent 16% of its compute warps' samples at the CTA barrier before a stage's release. Not taken: the compute
warps as two partitions of 4, each over half the slice's rows with its own barrier and arrive (that barrier's samples
from 10.8% of all to 1.1%, the wait moved to the fetched sums; x0.91-1.03), the masked dy written back into its stage
in pass one again (x0.91-0.97).

Round 99 (H200, GPU runs 740-743). LayerNorm's plain backward with dB holds 5 rows in flight (``STAGES``, 4 before;
``config.split_staged_stages``): x1.051 / x1.035 / x1.006 at 32768 x 16384 / 32768 / 65536 (96.8 / 97.7 / 84.6% of the
copy). The masked backward's mask does not fit a fifth stage (2156 bytes over). Why the masked backward outran the
plain one at 32768 x 65536 (0.951x its time): not dy's values nor the GPU's clocks (the plain backward with dy random,
half zeros or zeros within 0.3%, run 742), not the mask's bytes (not loaded x1.013), but its bit test (untested
x0.937, the plain backward's speed): its longer step gives the step's loads time to arrive. In Nsight Compute (run
740) 15% of its samples wait on a load, the partners' sums; 22% of the plain backward's, 19% on the move of the row
statistics loaded in the step into uniform registers, and 25% one row ahead, on the partners' sums.

Round 100 (H200, GPU runs 746-750). The split staged backward's load warp stages each row's mean and rstd with its
slice (``STATS_STAGED``: a slot of the stage, stored before the stage's arrive), so the compute warps read them after
the stage's wait and no load or move of them stands in their step (``config.split_staged_stats_staged``: LayerNorm's
with dB, masked or not): LayerNorm's with dB x1.133 at 32768 x 65536 (96% of the copy), x1.122 at 4096 x 65536 fp16,
level at 16384-32768; the masked backward x1.014-1.041. The masked backward with dB holds 5 rows in flight at 16384
and 65536 (``config.split_staged_stages``), its dW and dB partials stored as they lie where the layout change's
scratch does not fit beside the stages (``_scratch_fits``); at 65536 it runs two rows ahead, as the plain backward
(x1.023 / x1.026 at 32768 x 65536 / 16384). Its time over the plain backward's at 32768 rows: 1.029 / 1.031 / 1.040x
at 16384 / 32768 / 65536.

Round 101 (H200, GPU runs 752-755). LayerNorm's backward at its short rows, every multiple of 512 from 5632 to 10240
(22-40 rows of 256), with dB and without, takes the whole-row kernel at 8 compute warps and 3 rows in flight
(``config.STAGED_LN_SHORT_BWD_N``), where the rules ran the pointer kernel's head and tail tiles, a row by the TMA or
split rows: in turns x1.012-1.105 at 4096 rows fp16 with dB (x1.012-1.270 without), x1.018-1.182 at 32768 bf16 (97-100%
of the copy at 6656-10240). Round 78 had found LayerNorm there x0.57-0.98 in every form (4 or 8 compute warps, 2-4
stages); round 93's sums taken across the warps once a row came between. The code is the kernel's as it was (no stack
at 8 warps, 168 registers a thread; at 4 warps it spilled 688-944 bytes from 8192 columns).

Round 104 (H200, GPU runs 768-771). LayerNorm's backward with dB, summed by the compute warps, held dB's float32 sums
in registers beside dW's and read dy a third time for them; at 240 registers a thread the compute warps spilled 80
bytes at 13824-14336 and 32-48 at 14848-15872 (ptxas for sm_90). Now pass two (``_pass_two``) returns dy with dW's
term and each part's terms are added before the next part's pass two (all parts' terms held at once ran x0.96-0.99,
run 770), and ``DB_SHARED`` keeps the last part's (1) or two parts' (2) dB in float32 shared memory, each thread
adding to its own elements in the part's layout (no barrier), zeroed first and read back for the partial
(``config.STAGED_DB_SHARED``): no spill at 13824-14336, 4-8 bytes at 14848-15872. In turns x1.19 / x1.16 at 4096 x
13824 / 14336 fp16, x1.16 / x1.23 at 32768 bf16 (96-100% of the copy), x1.02-1.04 at 13312 (dy's third read gone);
14848-15872 with dB took the kernel from 4096 / 8192 rows. The paths without dB compile to the same PTX instructions as
before.

Round 105 (H200, GPU runs 773-778). At 4096 x 15360 fp16 LayerNorm's kernel with dB ran 114 us to RMSNorm's 94
(torch.profiler) and moved 3.2 TB/s to its 3.9 (Nsight Compute). Its warps' samples: 13.6% waiting at the barrier of the
row's two sums, and 8% on two reloads of spilled registers (a lane's address for its warp's sums and a column offset for
dx) just before it, which every warp then waits out. ``gl.reduce``'s exchange of the pair (``_sum_pair``: one lane a
warp stores, a barrier, one warp adds, a barrier, all load) holds more registers than the row's sums need;
``_cross_warps_pair`` has each warp store its two sums to a scratch of its own, one barrier, then every thread loads all
of them and adds them itself (``PAIR_SCRATCH``; two slots a row's parity, so a warp's stores for the next row cannot
overwrite sums another warp has yet to load; Triton's barrier pass, which cannot tell the slots apart, also puts a
barrier between the two stores: in two allocations they shared one and ran level, run 778). With it nothing spills at
14848-15872 (8 bytes before; 13824-14336 with dB all in registers: 0, 80 before). In turns against round 104's rule (run
776-777, fp16 but where named): x1.14-1.19 at 14848, x1.09-1.17 at 15360-15872 from 2048 to 8192 rows, x1.11-1.15 at
32768 bf16 (96% of the copy), zero-centered x1.10-1.16; these widths now take the kernel from 2048 rows. Elsewhere the
scratch ran slower than ``gl.reduce`` (run 775: x0.91 at 10240, x0.92-0.99 at 13824-14336 whatever the dB parts in
shared memory, x0.98-1.00 without dB), so it is taken at 14848-15872 with dB only (``config.staged_pair_scratch``).
Loading each row's mean and rstd from a slot the load warp fills (as ``_split_loader``'s ``STATS_STAGED``) instead
spilled more (12 bytes at 15360 fp16): not kept.

Round 110 (H200, GPU runs 812-813). LayerNorm + clamped ReLU's backward (``HAS_MASK``): the load warp stages each
part's mask bytes with its x and dy (the mask viewed as rows of 32 bytes, a part's box ``[R, 32]``, as the split staged
kernel's), and both passes mask dy from them (``_masked_dy``: a thread holds a byte's 8 columns, so only where every
part's rows of 256 are a multiple of the warps: 6144, 7680, 8192 and 10240 at 8 warps, ``masked_parts``); dB is the
compute warps' (``_db_sum``'s warps would read dy unmasked). No spill at those widths (sm_90). In turns against the rule
before: x1.149 / 1.109 / 1.053 / 1.224 at 4096 x 6144 / 7680 / 8192 / 10240 fp16, x1.242 / 1.149 at 32768 x 6144 /
10240 bf16 (97-98% of the copy); its time 1.014-1.022x the plain backward's at 4096 x 6144-8192 (1.08-1.17x before).

Round 111 (H200, GPU runs 815-817). The mask at every short row: where a part has fewer rows of 256 than warps (4608 =
16 + 2, 5632 = 16 + 4 + 2, 8704 = 32 + 2, ...) the warps lie across its rows (``layout``), a thread holds 4, 2 or 1
columns of a byte and the lanes that share it lie beside each other (``mask_layout``); a part's mask buffer holds at
least 4 rows a stage (``_mask_stage``: 2 rows put the next stage's bytes 64 bytes on, a misaligned address for the
TMA). In turns against the rule before at 4608-9728 (``config._staged_masked_bwd``): x1.11-1.32 at 4096 rows fp16,
x1.14-1.28 at 3072, x1.14-1.31 at 32768 bf16 (5632-9728, 94-101% of the copy); its time 1.003-1.018x the plain
backward's at 4096 x 4608-9728 fp16.

``config._staged_bwd`` says where it is taken. Written against Triton 3.6's Gluon: importing this module raises
``ImportError`` elsewhere, and the rules then never take it (``ops.STAGED``).
"""

from __future__ import annotations

import triton

if not triton.__version__.startswith("3.6"):
    raise ImportError(f"normkit's Gluon kernel is written for Triton 3.6, not {triton.__version__}")

from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma  # noqa: E402
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # noqa: E402

COLUMNS = 256  # a row is viewed as rows of this many columns (a TMA box's widest)
MAX_PARTS = 3
MASK_STAGE_ROWS = gl.constexpr(4)  # a part's mask bytes a stage take at least 4 rows of 32 bytes (see ``_mask_stage``)
LOADER_REGISTERS = gl.constexpr(24)  # the load warp's registers a thread (``gl.warp_specialize``)
# a row sums' slot not yet published (``split_staged_kernel``): ``norm_bwd.SENTINEL``, which ``ops`` fills the slots
# with (this file is compiled on its own in the tests, so it imports nothing of normkit)
SENTINEL = gl.constexpr(-1)


@gluon.jit
def _mask_stage(ms, stage, R: gl.constexpr, HAS_MASK: gl.constexpr):
    """A part's mask bytes in stage ``stage`` (``[R, 32]``). A stage's buffer has at least ``MASK_STAGE_ROWS`` rows
    (128 bytes, the TMA's alignment of its shared memory: a part of 1 or 2 rows of 256 would put the next stage's bytes
    at 32 or 64, a misaligned address), its first R rows the part's."""
    if HAS_MASK and R > 0 and R < MASK_STAGE_ROWS:
        return ms.index(stage).slice(0, R)
    else:
        return ms.index(stage)


@gluon.jit
def _load_row(xda, dyda, xdb, dydb, xdc, dydc, mda, mdb, mdc, bar, xa, dya, xb, dyb, xc, dyc, ma, mb, mc, row,
              RA: gl.constexpr, RB: gl.constexpr, RC: gl.constexpr, VALID: gl.constexpr,
              HAS_MASK: gl.constexpr):  # fmt: skip
    """Row ``row``'s x and dy (and where ``HAS_MASK`` its mask's bytes) into one stage's buffers, one TMA copy a part
    and tensor (its descriptor's box is the part), counted on ``bar``. The row is the ``VALID`` rows of 256 from ``row
    * VALID`` on; a part padded past them reads the next row's first rows of 256 (zeros past the last row), which the
    kernel masks."""
    ROWS: gl.constexpr = RA + RB + RC
    mbarrier.expect(bar, 2 * ROWS * 256 * xda.dtype.primitive_bitwidth // 8 + (ROWS * 32 if HAS_MASK else 0))
    first = row * VALID
    tma.async_copy_global_to_shared(xda, [first, 0], bar, xa)
    tma.async_copy_global_to_shared(dyda, [first, 0], bar, dya)
    if HAS_MASK:  # the mask viewed as rows of 32 bytes (256 columns): the same row index as x's
        tma.async_copy_global_to_shared(mda, [first, 0], bar, ma)
    if RB > 0:
        tma.async_copy_global_to_shared(xdb, [first + RA, 0], bar, xb)
        tma.async_copy_global_to_shared(dydb, [first + RA, 0], bar, dyb)
        if HAS_MASK:
            tma.async_copy_global_to_shared(mdb, [first + RA, 0], bar, mb)
    if RC > 0:
        tma.async_copy_global_to_shared(xdc, [first + RA + RB, 0], bar, xc)
        tma.async_copy_global_to_shared(dydc, [first + RA + RB, 0], bar, dyc)
        if HAS_MASK:
            tma.async_copy_global_to_shared(mdc, [first + RA + RB, 0], bar, mc)


@gluon.jit
def _weights(ws, L: gl.constexpr, ZERO_CENTERED: gl.constexpr):
    w = ws.load(L).to(gl.float32)
    if ZERO_CENTERED:
        w += 1.0
    return w


@gluon.jit
def _global_weights(W, offsets, ZERO_CENTERED: gl.constexpr):
    """A slice's weights read from global memory (``W`` its first column's address, ``offsets`` in the compute
    layout) as float32, 1 added where they are zero-centered: the split staged kernels' (the backward's, the
    forward's), which hold them in registers."""
    w = gl.load(W + offsets).to(gl.float32)
    if ZERO_CENTERED:
        w += 1.0
    return w


@gluon.jit
def _offsets(START: gl.constexpr, R: gl.constexpr, L: gl.constexpr):
    """A part's elements' offsets in its row (``START``: the part's first row of 256)."""
    rows = gl.arange(0, R, layout=gl.SliceLayout(1, L))
    columns = gl.arange(0, 256, layout=gl.SliceLayout(0, L))
    return (START + rows)[:, None] * 256 + columns[None, :]


@gluon.constexpr_function
def _warps(L):
    """The warps of a part's layout ``L`` (``layout``)."""
    return L.warps_per_cta[0] * L.warps_per_cta[1]


@gluon.constexpr_function
def _warp_rows_layout(L):
    """A part's ``[R, 256]`` in ``L`` seen as ``[warps, R * 256 / warps]``, a row a warp: the same registers (a warp
    holds R / warps whole rows of 256, the layout's tile repeated along its row, or, where the warps are across too,
    a slice of one row's columns)."""
    return gl.BlockedLayout([1, 256 // (32 * L.warps_per_cta[1])], [1, 32], [_warps(L), 1], [1, 0])


@gluon.constexpr_function
def _warp_sums_layout(warps):
    """The layout of a row's sums a warp each (``_warp_sums``): ``[warps]``, a warp's sum in all its lanes, the same
    whatever the part's layout, so the parts' add up in registers."""
    return gl.SliceLayout(1, gl.BlockedLayout([1, 1], [1, 32], [warps, 1], [1, 0]))


@gluon.jit
def _warp_sums(values, R: gl.constexpr, L: gl.constexpr):
    """A part's values (``[R, 256]`` in ``L``) summed a warp each, within the warp (shuffles, no shared memory):
    ``[warps]`` in ``_warp_sums_layout``. The parts' sums are added there and cross the warps once a row (``_compute``:
    ``_sum_pair``), rather than once a part and a sum (three barriers each)."""
    NW: gl.constexpr = _warps(L)
    rows = gl.convert_layout(gl.reshape(values, [NW, R * 256 // NW]), _warp_rows_layout(L), assert_trivial=True)
    return gl.convert_layout(gl.sum(rows, axis=1), _warp_sums_layout(NW), assert_trivial=True)


@gluon.jit
def _add_pairs(a, b, c, d):
    """The combine of a reduction of two sums at once (``gl.reduce`` over a pair)."""
    return a + c, b + d


@gluon.jit
def _sum_pair(a, b):
    """Two tensors' sums (of one shape and layout) in one reduction: their warps' partials cross the CTA through shared
    memory together, one set of barriers rather than two (``gl.sum`` each)."""
    if len(a.shape) == 2:
        a, b = gl.reduce((a, b), 1, _add_pairs)
    return gl.reduce((a, b), 0, _add_pairs)


@gluon.constexpr_function
def _all_warps_layout(warps):
    """``[warps]`` held whole by every thread (of ``warps`` warps)."""
    return gl.BlockedLayout([warps], [32], [warps], [0])


@gluon.jit
def _cross_warps_pair(s1, s2, scratch, at):
    """Two sums a warp each (``[warps]`` in ``_warp_sums_layout``) added over the warps through ``scratch``'s rows
    ``at`` and ``at + 1`` (float32 ``[4, warps]`` shared): each warp stores its own, one barrier, then every thread
    loads all of them and adds them itself."""
    NW: gl.constexpr = s1.shape[0]
    scratch.index(at).store(s1)
    scratch.index(at + 1).store(s2)
    gl.thread_barrier()
    a = scratch.index(at).load(_all_warps_layout(NW))
    b = scratch.index(at + 1).load(_all_warps_layout(NW))
    return gl.sum(a, axis=0), gl.sum(b, axis=0)


@gluon.jit
def _part_sum(xs, dys, ws, START: gl.constexpr, R: gl.constexpr, L: gl.constexpr, ZERO_CENTERED: gl.constexpr,
              VALID: gl.constexpr):  # fmt: skip
    """Pass one over a part: sum(w dy x) over the row's elements."""
    x = xs.load(L).to(gl.float32)
    dy = dys.load(L).to(gl.float32)
    product = _weights(ws, L, ZERO_CENTERED) * dy * x
    if START + R > VALID:  # a padded part (its weights past the row are zeros, but the next row's x may not be finite)
        product = gl.where(_offsets(START, R, L) < VALID * 256, product, 0.0)
    return gl.sum(gl.sum(product, axis=1), axis=0)


@gluon.jit
def _store(row, values, START: gl.constexpr, R: gl.constexpr, L: gl.constexpr, VALID: gl.constexpr):
    """A part's values (in layout ``L``) stored at their offsets from ``row``, where they are the row's."""
    offsets = _offsets(START, R, L)
    if START + R > VALID:
        gl.store(row + offsets, values, mask=offsets < VALID * 256)
    else:
        gl.store(row + offsets, values)


@gluon.constexpr_function
def _partial_layout(L):
    """The layout a part's float32 dW partial is stored in: 4 columns (16 bytes) a thread, so that a warp's store is
    512 contiguous bytes (where ``L`` gives a thread 8 columns, 32 bytes, a store writes 16 of them, and every sector
    is written twice)."""
    return gl.BlockedLayout([1, 4], [1, 32], L.warps_per_cta, [1, 0])


@gluon.jit
def _store_partial(row, values, START: gl.constexpr, R: gl.constexpr, L: gl.constexpr, VALID: gl.constexpr):
    """A part's dW partial (in layout ``L``) stored as ``_store`` does, its layout changed to ``_partial_layout``'s
    first."""
    wide: gl.constexpr = _partial_layout(L)
    _store(row, gl.convert_layout(values, wide), START, R, wide, VALID)


@gluon.jit
def _store_partials(row, a, b, c, RA: gl.constexpr, RB: gl.constexpr, RC: gl.constexpr, LA: gl.constexpr,
                    LB: gl.constexpr, LC: gl.constexpr, VALID: gl.constexpr):  # fmt: skip
    """A row's float32 partial from its parts' values ``a``-``c`` (layouts ``LA``-``LC``; an absent part's value is
    a placeholder, not read)."""
    _store_partial(row, a, 0, RA, LA, VALID)
    if RB > 0:
        _store_partial(row, b, RA, RB, LB, VALID)
    if RC > 0:
        _store_partial(row, c, RA + RB, RC, LC, VALID)


@gluon.jit
def _part_dx(xs, dys, ws, dx_row, rstd, k, START: gl.constexpr, R: gl.constexpr, L: gl.constexpr,
             ZERO_CENTERED: gl.constexpr, VALID: gl.constexpr):  # fmt: skip
    """Pass two over a part: dx = rstd w dy - k x stored; returns the part's dW term, dy x rstd, and its dB term, dy
    (float32)."""
    x = xs.load(L)
    dy = dys.load(L).to(gl.float32)
    xf = x.to(gl.float32)
    dx = rstd * (_weights(ws, L, ZERO_CENTERED) * dy) - k * xf
    _store(dx_row, dx.to(x.dtype), START, R, L, VALID)
    return dy * (xf * rstd), dy


@gluon.jit
def _ln_part_sums(xs, dys, ws, ms, mean, rstd, START: gl.constexpr, R: gl.constexpr, L: gl.constexpr,
                  L3: gl.constexpr, ZERO_CENTERED: gl.constexpr, VALID: gl.constexpr,
                  HAS_MASK: gl.constexpr):  # fmt: skip
    """LayerNorm's pass one over a part: sum(xhat w dy) and sum(w dy), xhat = (x - mean) rstd, a warp's each
    (``_warp_sums``); dy masked where ``HAS_MASK`` (``_masked_dy``, the part's mask bytes ``ms`` in ``L3``)."""
    xhat = (xs.load(L).to(gl.float32) - mean) * rstd
    wdy = _weights(ws, L, ZERO_CENTERED) * _masked_dy(dys, ms, R, L, L3, HAS_MASK)
    if START + R > VALID:  # a padded part: past the row, the next row's x and dy, which may not be finite (and the
        # weights' zeros would not cancel them), so both factors are selected, not only w dy
        inside = _offsets(START, R, L) < VALID * 256
        xhat = gl.where(inside, xhat, 0.0)
        wdy = gl.where(inside, wdy, 0.0)
    return _warp_sums(xhat * wdy, R, L), _warp_sums(wdy, R, L)


@gluon.jit
def _ln_part_dx(xs, dys, ws, ms, dx_row, mean, rstd, c1, c2, START: gl.constexpr, R: gl.constexpr,
                L: gl.constexpr, L3: gl.constexpr, ZERO_CENTERED: gl.constexpr, VALID: gl.constexpr,
                HAS_MASK: gl.constexpr):  # fmt: skip
    """LayerNorm's pass two over a part: dx = (w dy - (xhat c1 + c2)) rstd stored; returns the part's dW term,
    dy xhat, and its dB term, dy (float32; masked where ``HAS_MASK``, as in pass one)."""
    x = xs.load(L)
    dy = _masked_dy(dys, ms, R, L, L3, HAS_MASK)
    xhat = (x.to(gl.float32) - mean) * rstd
    dx = (_weights(ws, L, ZERO_CENTERED) * dy - (xhat * c1 + c2)) * rstd
    _store(dx_row, dx.to(x.dtype), START, R, L, VALID)
    return dy * xhat, dy


@gluon.jit
def _pass_two(xs, dys, ws, ms, dx_row, mean, rstd, c1, c2, START: gl.constexpr, R: gl.constexpr, L: gl.constexpr,
              L3: gl.constexpr, ZERO_CENTERED: gl.constexpr, IS_RMS: gl.constexpr, VALID: gl.constexpr,
              HAS_MASK: gl.constexpr):  # fmt: skip
    """Pass two over a part, RMSNorm's (``_part_dx``, k = c1; mean and c2 not read) or LayerNorm's (``_ln_part_dx``):
    dx stored; returns the part's dW and dB terms."""
    if IS_RMS:
        return _part_dx(xs, dys, ws, dx_row, rstd, c1, START, R, L, ZERO_CENTERED, VALID)
    else:
        return _ln_part_dx(xs, dys, ws, ms, dx_row, mean, rstd, c1, c2, START, R, L, L3, ZERO_CENTERED, VALID, HAS_MASK)


@gluon.jit
def _add_db(db, db_shared, dy, L: gl.constexpr, SHARED: gl.constexpr):
    """A part's dB terms (dy, layout ``L``) added to its sums: in shared memory where ``SHARED`` (each thread to its
    own elements, so no barrier; ``db``, a placeholder then, comes back as it went), else to ``db`` in registers."""
    if SHARED:
        db_shared.store(db_shared.load(L) + dy)
    else:
        db += dy
    return db


@gluon.jit
def _loader(xda, xdb, xdc, dyda, dydb, dydc, mda, mdb, mdc, xa, dya, xb, dyb, xc, dyc, ma, mb, mc, ready, empty,
            pid, programs, my_rows, RA: gl.constexpr, RB: gl.constexpr, RC: gl.constexpr, VALID: gl.constexpr,
            STAGES: gl.constexpr, HAS_MASK: gl.constexpr):  # fmt: skip
    """The load warp: the program's i-th row into stage ``i % STAGES`` (counted on ``ready``) once the compute warps
    (and the dB warps, where there are) have released the stage (``empty``; at first every stage is free)."""
    for i in range(my_rows):
        stage = i % STAGES
        mbarrier.wait(empty.index(stage), ((i // STAGES) & 1) ^ 1)
        _load_row(xda, dyda, xdb, dydb, xdc, dydc, mda, mdb, mdc, ready.index(stage), xa.index(stage),
                  dya.index(stage), xb.index(stage), dyb.index(stage), xc.index(stage), dyc.index(stage),
                  _mask_stage(ma, stage, RA, HAS_MASK), _mask_stage(mb, stage, RB, HAS_MASK),
                  _mask_stage(mc, stage, RC, HAS_MASK), pid + i * programs, RA, RB, RC, VALID, HAS_MASK)  # fmt: skip


@gluon.jit
def _compute(xa, dya, xb, dyb, xc, dyc, wsa, wsb, wsc, ready, empty, wbar, MEAN, RSTD, DX, PARTIAL, M, N, pid,
             programs, my_rows, dbsb, dbsc, RA: gl.constexpr, RB: gl.constexpr, RC: gl.constexpr, LA: gl.constexpr,
             LB: gl.constexpr, LC: gl.constexpr, VALID: gl.constexpr, STAGES: gl.constexpr,
             ZERO_CENTERED: gl.constexpr, IS_RMS: gl.constexpr, DB_HERE: gl.constexpr,
             DB_SHARED: gl.constexpr, ps, PAIR_SCRATCH: gl.constexpr, ma, mb, mc, L3A: gl.constexpr,
             L3B: gl.constexpr, L3C: gl.constexpr, HAS_MASK: gl.constexpr):  # fmt: skip
    """The compute warps: each row's sums, dx and dW's terms (and dB's where ``DB_HERE``), then its stage released to
    the load warp; at the end the program's dW partial (and dB's, ``PARTIAL``'s second half)."""
    # dW (and dB but the last DB_SHARED parts') in registers across the loop (up to 64 rows of 256: 64 a thread each)
    dwa = gl.zeros([RA, 256], gl.float32, LA)
    dwb, dwc = dwa, dwa  # where a part is absent: placeholders for ``_store_partials``
    if RB > 0:
        dwb = gl.zeros([RB, 256], gl.float32, LB)
    if RC > 0:
        dwc = gl.zeros([RC, 256], gl.float32, LC)
    if DB_HERE:
        dba = gl.zeros([RA, 256], gl.float32, LA)
        dbb, dbc = dba, dba
        if RB > 0 and DB_SHARED < 2:
            dbb = gl.zeros([RB, 256], gl.float32, LB)
        if RC > 0 and DB_SHARED < 1:
            dbc = gl.zeros([RC, 256], gl.float32, LC)
    mbarrier.wait(wbar, 0)
    rstd_next = gl.load(RSTD + pid)
    if not IS_RMS:
        mean_next = gl.load(MEAN + pid)
    for i in range(my_rows):
        row = pid + i * programs
        stage = i % STAGES
        ahead = gl.minimum(row + programs, M - 1)
        rstd = rstd_next
        rstd_next = gl.load(RSTD + ahead)
        if not IS_RMS:
            mean = mean_next
            mean_next = gl.load(MEAN + ahead)
        mbarrier.wait(ready.index(stage), (i // STAGES) & 1)
        xsa, dysa, msa = xa.index(stage), dya.index(stage), _mask_stage(ma, stage, RA, HAS_MASK)
        if RB > 0:
            xsb, dysb, msb = xb.index(stage), dyb.index(stage), _mask_stage(mb, stage, RB, HAS_MASK)
        if RC > 0:
            xsc, dysc, msc = xc.index(stage), dyc.index(stage), _mask_stage(mc, stage, RC, HAS_MASK)
        dx_row = DX + row.to(gl.int64) * N
        if IS_RMS:
            total = _part_sum(xsa, dysa, wsa, 0, RA, LA, ZERO_CENTERED, VALID)
            if RB > 0:
                total += _part_sum(xsb, dysb, wsb, RA, RB, LB, ZERO_CENTERED, VALID)
            if RC > 0:
                total += _part_sum(xsc, dysc, wsc, RA + RB, RC, LC, ZERO_CENTERED, VALID)
            c1 = rstd * rstd * rstd * total / N  # pass two's k
            c2 = c1  # placeholders, not read
            mean = rstd
        else:
            s1, s2 = _ln_part_sums(xsa, dysa, wsa, msa, mean, rstd, 0, RA, LA, L3A, ZERO_CENTERED, VALID, HAS_MASK)
            if RB > 0:
                t1, t2 = _ln_part_sums(xsb, dysb, wsb, msb, mean, rstd, RA, RB, LB, L3B, ZERO_CENTERED, VALID, HAS_MASK)
                s1 += t1
                s2 += t2
            if RC > 0:
                t1, t2 = _ln_part_sums(
                    xsc, dysc, wsc, msc, mean, rstd, RA + RB, RC, LC, L3C, ZERO_CENTERED, VALID, HAS_MASK
                )
                s1 += t1
                s2 += t2
            if PAIR_SCRATCH:  # a scratch a row's parity: reused two rows on, after the next row's barrier
                s1, s2 = _cross_warps_pair(s1, s2, ps, 2 * (i % 2))
            else:
                s1, s2 = _sum_pair(s1, s2)
            c1 = s1 / N
            c2 = s2 / N
        # pass two, a part at a time: dx stored, dW's term and dB's (dy, as pass two read it) added before the next
        # part (all parts' terms held at once ran x0.96-0.99, GPU run 770), the last parts' dB in shared memory where
        # DB_SHARED says
        term, dy = _pass_two(xsa, dysa, wsa, msa, dx_row, mean, rstd, c1, c2, 0, RA, LA, L3A, ZERO_CENTERED, IS_RMS,
                             VALID, HAS_MASK)  # fmt: skip
        dwa += term
        if DB_HERE:
            dba += dy
        if RB > 0:
            term, dy = _pass_two(xsb, dysb, wsb, msb, dx_row, mean, rstd, c1, c2, RA, RB, LB, L3B, ZERO_CENTERED,
                                 IS_RMS, VALID, HAS_MASK)  # fmt: skip
            dwb += term
            if DB_HERE:
                dbb = _add_db(dbb, dbsb, dy, LB, DB_SHARED >= 2)
        if RC > 0:
            term, dy = _pass_two(xsc, dysc, wsc, msc, dx_row, mean, rstd, c1, c2, RA + RB, RC, LC, L3C,
                                 ZERO_CENTERED, IS_RMS, VALID, HAS_MASK)  # fmt: skip
            dwc += term
            if DB_HERE:
                dbc = _add_db(dbc, dbsc, dy, LC, DB_SHARED >= 1)
        fence_async_shared()  # the reads above (the generic proxy) before the TMA's writes into the stage
        mbarrier.arrive(empty.index(stage), count=1)
    _store_partials(PARTIAL + pid.to(gl.int64) * N, dwa, dwb, dwc, RA, RB, RC, LA, LB, LC, VALID)
    if DB_HERE:
        if DB_SHARED >= 1:
            dbc = dbsc.load(LC)
        if DB_SHARED >= 2:
            dbb = dbsb.load(LB)
        _store_partials(PARTIAL + (programs + pid).to(gl.int64) * N, dba, dbb, dbc, RA, RB, RC, LA, LB, LC, VALID)


@gluon.jit
def _db_sum(dya, dyb, dyc, ready, empty, PARTIAL, N, pid, programs, my_rows, RA: gl.constexpr, RB: gl.constexpr,
            RC: gl.constexpr, DLA: gl.constexpr, DLB: gl.constexpr, DLC: gl.constexpr, VALID: gl.constexpr,
            STAGES: gl.constexpr):  # fmt: skip
    """The dB warps (``DB_WARPS`` of them): each row's dy added to dB (in their registers, layouts ``DLA``-``DLC``),
    then the stage released (the compute warps release it too); at the end the program's dB partial (``PARTIAL``'s
    second half)."""
    dba = gl.zeros([RA, 256], gl.float32, DLA)
    dbb, dbc = dba, dba
    if RB > 0:
        dbb = gl.zeros([RB, 256], gl.float32, DLB)
    if RC > 0:
        dbc = gl.zeros([RC, 256], gl.float32, DLC)
    for i in range(my_rows):
        stage = i % STAGES
        mbarrier.wait(ready.index(stage), (i // STAGES) & 1)
        dba += dya.index(stage).load(DLA).to(gl.float32)
        if RB > 0:
            dbb += dyb.index(stage).load(DLB).to(gl.float32)
        if RC > 0:
            dbc += dyc.index(stage).load(DLC).to(gl.float32)
        fence_async_shared()
        mbarrier.arrive(empty.index(stage), count=1)
    _store_partials(PARTIAL + (programs + pid).to(gl.int64) * N, dba, dbb, dbc, RA, RB, RC, DLA, DLB, DLC, VALID)


@gluon.jit
def norm_bwd_staged_kernel(
    xda, xdb, xdc, dyda, dydb, dydc, wda, wdb, wdc, mda, mdb, mdc, MEAN, RSTD, DX, PARTIAL, M, N,
    RA: gl.constexpr, RB: gl.constexpr, RC: gl.constexpr, LA: gl.constexpr, LB: gl.constexpr, LC: gl.constexpr,
    DLA: gl.constexpr, DLB: gl.constexpr, DLC: gl.constexpr, VALID: gl.constexpr, STAGES: gl.constexpr,
    ZERO_CENTERED: gl.constexpr, IS_RMS: gl.constexpr, HAS_DBIAS: gl.constexpr, DB_WARPS: gl.constexpr,
    DB_REGISTERS: gl.constexpr, DB_SHARED: gl.constexpr, PAIR_SCRATCH: gl.constexpr, HAS_MASK: gl.constexpr,
    L3A: gl.constexpr, L3B: gl.constexpr, L3C: gl.constexpr,
):  # fmt: skip
    """RMSNorm's or LayerNorm's dx ``[M, N]`` and each program's float32 dW partial (``PARTIAL``: ``[1 or 2,
    programs, N]``, dB's second where ``HAS_DBIAS``) from dy, x (their descriptors: ``[M * N / 256, 256]``, one a
    part, the box the part's ``[R, 256]``), the weights' (``[N / 256, 256]``), the mean (LayerNorm's; RMSNorm passes
    rstd there, unread) and rstd. ``RA``-``RC``: the parts' rows of 256 (largest first but LayerNorm's without dB at
    49-56 rows of 256), 0 where absent (whose descriptors, buffers and code are left out; ``parts``), ``VALID`` of
    them the row's (N / 256); ``LA``-``LC`` their register layouts. The launch's ``num_warps`` compute
    (``_compute``); one more warp loads (``_loader``). dB is summed by ``DB_WARPS`` warps of its own (``_db_sum``,
    layouts ``DLA``-``DLC``, ``DB_REGISTERS`` registers a thread: the compute warps get what is left), or by the compute
    warps where ``DB_WARPS`` is 0."""
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    my_rows = (M - pid + programs - 1) // programs
    dtype: gl.constexpr = xda.dtype
    staged: gl.constexpr = xda.layout
    # a part's buffers: STAGES rows of x and dy, the weights (the first part's where a part is absent)
    xa = gl.allocate_shared_memory(dtype, [STAGES, RA, 256], staged)
    dya = gl.allocate_shared_memory(dtype, [STAGES, RA, 256], staged)
    wsa = gl.allocate_shared_memory(wda.dtype, [RA, 256], staged)
    xb, dyb, xc, dyc, wsb, wsc = xa, dya, xa, dya, wsa, wsa
    if RB > 0:
        xb = gl.allocate_shared_memory(dtype, [STAGES, RB, 256], staged)
        dyb = gl.allocate_shared_memory(dtype, [STAGES, RB, 256], staged)
        wsb = gl.allocate_shared_memory(wda.dtype, [RB, 256], staged)
    if RC > 0:
        xc = gl.allocate_shared_memory(dtype, [STAGES, RC, 256], staged)
        dyc = gl.allocate_shared_memory(dtype, [STAGES, RC, 256], staged)
        wsc = gl.allocate_shared_memory(wda.dtype, [RC, 256], staged)
    ma, mb, mc = xa, xa, xa  # placeholders, not read without a mask
    if HAS_MASK:  # a part's mask bytes a stage: [R, 32] (a row of 256 columns' bytes), at least 128 (``_mask_stage``)
        MRA: gl.constexpr = RA if RA > MASK_STAGE_ROWS else MASK_STAGE_ROWS
        MRB: gl.constexpr = RB if RB > MASK_STAGE_ROWS else MASK_STAGE_ROWS
        MRC: gl.constexpr = RC if RC > MASK_STAGE_ROWS else MASK_STAGE_ROWS
        ma = gl.allocate_shared_memory(mda.dtype, [STAGES, MRA, 32], mda.layout)
        if RB > 0:
            mb = gl.allocate_shared_memory(mda.dtype, [STAGES, MRB, 32], mda.layout)
        if RC > 0:
            mc = gl.allocate_shared_memory(mda.dtype, [STAGES, MRC, 32], mda.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())  # a stage's row loaded
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())  # a stage's row done with
    wbar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    db_apart: gl.constexpr = HAS_DBIAS and DB_WARPS > 0
    dbsb, dbsc = ready, ready  # placeholders, not read
    if DB_SHARED >= 1:  # the last part's (or two's) dB in shared memory, zeroed by the threads that will add to it
        dbsc = gl.allocate_shared_memory(gl.float32, [RC, 256], _DB_SHARED)
        dbsc.store(gl.zeros([RC, 256], gl.float32, LC))
    if DB_SHARED >= 2:
        dbsb = gl.allocate_shared_memory(gl.float32, [RB, 256], _DB_SHARED)
        dbsb.store(gl.zeros([RB, 256], gl.float32, LB))
    ps = ready  # a placeholder, not read
    if PAIR_SCRATCH:  # LayerNorm's row sums crossing the warps, two slots a row's parity (``_cross_warps_pair``)
        ps = gl.allocate_shared_memory(gl.float32, [4, _warps(LA)], _PAIR_SHARED)
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2 if db_apart else 1)  # released by the compute (and dB) warps
    mbarrier.init(wbar, count=1)
    # the weights, once (zeros past the row)
    mbarrier.expect(wbar, (RA + RB + RC) * 256 * wda.dtype.primitive_bitwidth // 8)
    tma.async_copy_global_to_shared(wda, [0, 0], wbar, wsa)
    if RB > 0:
        tma.async_copy_global_to_shared(wdb, [RA, 0], wbar, wsb)
    if RC > 0:
        tma.async_copy_global_to_shared(wdc, [RA + RB, 0], wbar, wsc)
    if db_apart:
        gl.warp_specialize(
            [
                (_compute, (xa, dya, xb, dyb, xc, dyc, wsa, wsb, wsc, ready, empty, wbar, MEAN, RSTD, DX, PARTIAL, M,
                            N, pid, programs, my_rows, dbsb, dbsc, RA, RB, RC, LA, LB, LC, VALID, STAGES,
                            ZERO_CENTERED, IS_RMS, False, 0, ps, PAIR_SCRATCH, ma, mb, mc, L3A, L3B, L3C, False)),
                (_loader, (xda, xdb, xdc, dyda, dydb, dydc, mda, mdb, mdc, xa, dya, xb, dyb, xc, dyc, ma, mb, mc,
                           ready, empty, pid, programs, my_rows, RA, RB, RC, VALID, STAGES, False)),
                (_db_sum, (dya, dyb, dyc, ready, empty, PARTIAL, N, pid, programs, my_rows, RA, RB, RC, DLA, DLB, DLC,
                           VALID, STAGES)),
            ],
            [1, DB_WARPS], [LOADER_REGISTERS, DB_REGISTERS],
        )  # fmt: skip
    else:
        gl.warp_specialize(
            [
                (_compute, (xa, dya, xb, dyb, xc, dyc, wsa, wsb, wsc, ready, empty, wbar, MEAN, RSTD, DX, PARTIAL, M,
                            N, pid, programs, my_rows, dbsb, dbsc, RA, RB, RC, LA, LB, LC, VALID, STAGES,
                            ZERO_CENTERED, IS_RMS, HAS_DBIAS, DB_SHARED, ps, PAIR_SCRATCH, ma, mb, mc, L3A, L3B, L3C,
                            HAS_MASK)),
                (_loader, (xda, xdb, xdc, dyda, dydb, dydc, mda, mdb, mdc, xa, dya, xb, dyb, xc, dyc, ma, mb, mc,
                           ready, empty, pid, programs, my_rows, RA, RB, RC, VALID, STAGES, HAS_MASK)),
            ],
            [1], [LOADER_REGISTERS],
        )  # fmt: skip


# The split staged kernel (``split_staged_kernel``): rows too long to stage whole, split in slices over several programs


@gluon.jit
def _split_loader(xd, dyd, md, xs, dys, ms, ready, empty, group, groups, part, my_rows, MEAN, RSTD, st,
                  SR: gl.constexpr, VALID: gl.constexpr, STAGES: gl.constexpr, AHEAD: gl.constexpr,
                  HAS_MASK: gl.constexpr, STATS_STAGED: gl.constexpr):  # fmt: skip
    """The load warp: the program's slice of its i-th row (x, dy and where ``HAS_MASK`` the mask's bytes) into stage
    ``i % STAGES``, and its last row ``AHEAD`` times more (the compute warps' pass one runs ``AHEAD`` rows ahead,
    ``_split_compute``). ``STATS_STAGED``: the row's mean and rstd too, into the stage's slot of ``st`` (float32
    ``[STAGES, 2]``) before the stage's arrive, which orders them for the compute warps' wait; each loaded a row
    early, so that the store does not wait out the load."""
    if STATS_STAGED:
        pair = gl.arange(0, 2, layout=_pair_layout(1))
        mean_next, rstd_next = gl.load(MEAN + group), gl.load(RSTD + group)
    for i in range(my_rows + AHEAD):
        stage = i % STAGES
        mbarrier.wait(empty.index(stage), ((i // STAGES) & 1) ^ 1)
        first = (group + gl.minimum(i, my_rows - 1) * groups) * VALID + part * SR
        bar = ready.index(stage)
        if STATS_STAGED:
            st.index(stage).store(gl.where(pair == 0, mean_next, rstd_next))
            following = group + gl.minimum(i + 1, my_rows - 1) * groups
            mean_next, rstd_next = gl.load(MEAN + following), gl.load(RSTD + following)
        mbarrier.expect(bar, 2 * SR * 256 * xd.dtype.primitive_bitwidth // 8 + (SR * 32 if HAS_MASK else 0))
        tma.async_copy_global_to_shared(xd, [first, 0], bar, xs.index(stage))
        tma.async_copy_global_to_shared(dyd, [first, 0], bar, dys.index(stage))
        if HAS_MASK:  # the mask viewed as rows of 32 bytes (256 columns): the same row index as x's
            tma.async_copy_global_to_shared(md, [first, 0], bar, ms.index(stage))


# a stage's slot of a row's (mean, rstd) (``_split_loader``); the whole-row kernel's row sums' scratch (PAIR_SCRATCH)
_PAIR_SHARED = gl.SwizzledSharedLayout(1, 1, 1, order=[0])
_DB_SHARED = gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0])  # the staged kernel's dB of its last parts


@gluon.constexpr_function
def _pair_layout(warps):
    """A row's (mean, rstd) pair held whole by every thread of ``warps`` warps: the load warp's (``_split_loader``),
    the compute warps' (``_staged_stats``)."""
    return gl.BlockedLayout([2], [32], [warps], [0])


@gluon.jit
def _staged_stats(slot, L: gl.constexpr):
    """A staged row's mean and rstd (its stage's slot of ``st``, ``_split_loader``), every thread both."""
    pair = slot.load(_pair_layout(_warps(L)))
    at = gl.arange(0, 2, layout=_pair_layout(_warps(L)))
    return gl.sum(gl.where(at == 0, pair, 0.0), axis=0), gl.sum(gl.where(at == 1, pair, 0.0), axis=0)


@gluon.jit
def _pack_sums(s1, s2):
    """Two float32 sums as one int64 (s1's bits high), published with one 64-bit write (``norm_bwd._pack_sums``)."""
    hi = s1.to(gl.uint32, bitcast=True).to(gl.int64)
    lo = s2.to(gl.uint32, bitcast=True).to(gl.int64)
    return (hi << 32) | lo


@gluon.jit
def _masked_dy(dys, ms, SR: gl.constexpr, L: gl.constexpr, L3: gl.constexpr, HAS_MASK: gl.constexpr):
    """A staged slice of dy (``[SR, 256]``) in float32 in ``L``; where ``HAS_MASK`` times the clamped ReLU's mask bits
    (``ms``: the slice's mask bytes as staged, ``[SR, 32]``). A thread of ``L`` holds 8 consecutive columns, one mask
    byte: it loads its own bytes in ``L3``'s slice (the slice as ``[SR, 32, 8]``, ``mask_layout``), tests each byte's 8
    bits along the last axis and takes them back to ``L`` (no data moved). A clear bit gives ``dy * 0`` (NaN for an
    infinite dy, as the reference's ``dy * mask``; ``norm_bwd._masked_dy``)."""
    dy = dys.load(L).to(gl.float32)
    if HAS_MASK:
        packed = ms.load(gl.SliceLayout(2, L3)).to(gl.int32)
        bit = 1 << gl.arange(0, 8, layout=gl.SliceLayout(0, gl.SliceLayout(1, L3)))
        bits = gl.convert_layout(gl.reshape(packed[:, :, None] & bit[None, None, :], [SR, 256]), L, assert_trivial=True)
        dy = gl.where(bits != 0, dy, dy * 0.0)
    return dy


@gluon.jit
def _publish_slice(xs, dys, w, mean, rstd, slot, ms, SR: gl.constexpr, L: gl.constexpr, L3: gl.constexpr,
                   IS_RMS: gl.constexpr, HAS_MASK: gl.constexpr, WARP_SUMS: gl.constexpr):  # fmt: skip
    """Pass one over a row's slice: its sums (RMSNorm's ``sum(w dy x)``; LayerNorm's ``sum(xhat w dy)`` and ``sum(w
    dy)``; dy masked where ``HAS_MASK``, ``_masked_dy``), packed, published and returned. Where ``WARP_SUMS`` a warp's
    sums each, within the warp (``_warp_sums``), to ``slot + warp``: no exchange between the warps. Else the slice's
    sums, the pair as one reduction (``_sum_pair``), to ``slot``. The pair rather than two sums (round 93, GPU run 707,
    in turns against round 91's kernel at 32768 rows, bf16 x, float32 weights): the masked backward x1.015 / x1.020 at
    16384 / 32768 columns, LayerNorm's with dB x1.004, without x1.001 / x1.012."""
    wdy = w * _masked_dy(dys, ms, SR, L, L3, HAS_MASK)
    if IS_RMS:
        products = wdy * xs.load(L).to(gl.float32)
        if WARP_SUMS:
            s1 = _warp_sums(products, SR, L)
        else:
            s1 = gl.sum(gl.sum(products, axis=1), axis=0)
        s2 = s1 * 0.0
    else:
        xhat = (xs.load(L).to(gl.float32) - mean) * rstd
        if WARP_SUMS:
            s1 = _warp_sums(xhat * wdy, SR, L)
            s2 = _warp_sums(wdy, SR, L)
        else:
            s1, s2 = _sum_pair(xhat * wdy, wdy)
    own = _pack_sums(s1, s2)
    if WARP_SUMS:
        gl.atomic_xchg(slot + gl.arange(0, _warps(L), layout=_warp_sums_layout(_warps(L))), own, sem="relaxed")
    else:
        gl.atomic_xchg(slot, own, sem="relaxed")
    return own


@gluon.jit
def _fetch_sums(slots, parts, others):
    """The group's other slices' packed sums of a row, as published so far (``SENTINEL`` where not yet)."""
    return gl.load(slots + parts, mask=others, other=SENTINEL, volatile=True)


@gluon.jit
def _slices_sums(sums, slots, own, parts, part, others, PARTS: gl.constexpr, MAX_POLLS: gl.constexpr):
    """A row's two sums of each of its slices (``parts``' layout; 0 past ``PARTS``): the program's own (``own``) and
    the other slices' (``sums``, fetched; those missing from ``slots`` again until all are there, at most
    ``MAX_POLLS`` times: a slice missing after that leaves NaN). ``parts``' layout gives every thread all the slots,
    so each thread's loop ends on its own loads."""
    sums = _polled(sums, slots, parts, others, MAX_POLLS)
    return _unpacked(gl.where(parts == part, own, gl.where(parts < PARTS, sums, 0)))


@gluon.jit
def _polled(sums, slots, at, wanted, MAX_POLLS: gl.constexpr):
    """A row's slots as fetched (``sums``, at ``slots + at``), those ``wanted`` still missing (``SENTINEL``) fetched
    again until all are there, at most ``MAX_POLLS`` times."""
    missing = wanted & (sums == SENTINEL)
    polls = 0
    while (gl.max(missing.to(gl.int32), axis=0) > 0) & (polls < MAX_POLLS):
        sums = gl.where(missing, gl.load(slots + at, mask=missing, other=SENTINEL, volatile=True), sums)
        missing = wanted & (sums == SENTINEL)
        polls += 1
    return sums


@gluon.jit
def _unpacked(sums):
    """Packed pairs of sums (``_pack_sums``) as their two float32 sums."""
    s1 = (sums >> 32).to(gl.uint32).to(gl.float32, bitcast=True)
    s2 = (sums & 0xFFFFFFFF).to(gl.uint32).to(gl.float32, bitcast=True)
    return s1, s2


@gluon.jit
def _row_means(sums, slots, own, parts, part, others, N, PARTS: gl.constexpr, MAX_POLLS: gl.constexpr):
    """A row's means of its sums over all its slices (``_slices_sums``), added in slice order."""
    s1, s2 = _slices_sums(sums, slots, own, parts, part, others, PARTS, MAX_POLLS)
    return gl.sum(s1, axis=0) / N, gl.sum(s2, axis=0) / N


@gluon.jit
def _warp_row_means(sums, slots, at, ROW_SLOTS: gl.constexpr, N, MAX_POLLS: gl.constexpr):
    """A row's means of its sums published a warp each (``ROW_SLOTS`` slots; ``at``: ``_slots_layout``'s indices, as
    fetched, ``sums``): those still missing fetched again until all are there, at most ``MAX_POLLS`` times (a slot
    missing after that leaves NaN), then summed within each warp (every warp holds all the slots)."""
    valid = at < ROW_SLOTS
    s1, s2 = _unpacked(gl.where(valid, _polled(sums, slots, at, valid, MAX_POLLS), 0))
    return gl.sum(s1, axis=0) / N, gl.sum(s2, axis=0) / N


@gluon.constexpr_function
def _slots_layout(slots, warps):
    """A row's sums' slots (``slots``, a power of 2) over a warp's lanes, every warp holding all of them
    (``WARP_SUMS``'s fetch: a warp sums them with shuffles alone)."""
    return gl.BlockedLayout([max(slots // 32, 1)], [32], [warps], [0])


@gluon.constexpr_function
def _slice_slots(L, WARP_SUMS):
    """The slots of a row's sums a slice publishes: one a warp (``L``'s) where ``WARP_SUMS``, else one."""
    return _warps(L) if WARP_SUMS else 1


@gluon.jit
def _split_compute(xs, dys, ms, ws, ready, empty, wbar, W, MEAN, RSTD, DX, PARTIAL, SUMS, M, N, group, groups, part,
                   my_rows, st, SR: gl.constexpr, L: gl.constexpr, PL: gl.constexpr, L3: gl.constexpr,
                   PARTS: gl.constexpr, PARTS_P2: gl.constexpr, STAGES: gl.constexpr, ZERO_CENTERED: gl.constexpr,
                   IS_RMS: gl.constexpr, HAS_DBIAS: gl.constexpr, MAX_POLLS: gl.constexpr, W_SHARED: gl.constexpr,
                   AHEAD: gl.constexpr, FETCH_FIRST: gl.constexpr, HAS_MASK: gl.constexpr,
                   WARP_SUMS: gl.constexpr, STATS_STAGED: gl.constexpr):  # fmt: skip
    """The compute warps: each step publishes the slice sums of the row ``AHEAD`` ahead (its slice staged by then)
    and reads this row's, which the other programs of the group published ``AHEAD`` steps ago; then this row's dx, dW
    terms (and dB's) and its stage released. With ``AHEAD`` 1 it fetches them after the publish (before it with
    ``FETCH_FIRST``: their trip to L2 then overlaps the publish's reductions); with 2 it fetches the next row's in
    this step, a step before they are used, so their trip to L2 is off the row's path (a program then holds three rows
    staged). The slice's weights are held in registers (float32) across the loop, read once from ``ws`` (``W_SHARED``:
    staged by the TMA, ``wbar`` its barrier) or from global memory (``W``, a pointer: no shared memory for them, which
    gives slices of 16384 a third stage). ``HAS_MASK``: dy masked by the clamped ReLU's bits in both passes (the slice's
    mask bytes staged with x and dy, ``ms``; ``_masked_dy``). ``WARP_SUMS``: the sums published a warp each (a row's
    ``PARTS`` x warps slots), fetched and added by every warp (``_warp_row_means``); else a slice's each (``PARTS``
    slots; ``_row_means``). ``STATS_STAGED``: each row's mean and rstd read from its stage (``st``, stored there by the
    load warp) after the stage's wait; else loaded from global memory a row or two ahead of their use and carried
    from step to step in registers."""
    dw = gl.zeros([SR, 256], gl.float32, L)
    db = dw
    if HAS_DBIAS:
        db = gl.zeros([SR, 256], gl.float32, L)
    SLOTS: gl.constexpr = _slice_slots(L, WARP_SUMS)  # a slice's slots of a row's sums
    ROW_SLOTS: gl.constexpr = PARTS * SLOTS
    # the slots a step fetches (``at``, of which ``wanted``): all the row's, by every warp, where WARP_SUMS; else the
    # other slices'
    if WARP_SUMS:
        at = gl.arange(0, PARTS_P2 * SLOTS, layout=_slots_layout(PARTS_P2 * SLOTS, _warps(L)))
        wanted = at < ROW_SLOTS
    else:
        at = gl.arange(0, PARTS_P2, layout=PL)
        wanted = (at < PARTS) & (at != part)
    offsets = _offsets(0, SR, L)
    col0 = part * (SR * 256)
    if W_SHARED:
        mbarrier.wait(wbar, 0)
        w = _weights(ws, L, ZERO_CENTERED)
    else:
        w = _global_weights(W + col0, offsets, ZERO_CENTERED)
    # the first rows' statistics (row 0's to AHEAD's; RMSNorm reads rstd for the mean, unused) and rows 0 to AHEAD - 1
    # published
    second = group + gl.minimum(1, my_rows - 1) * groups
    if not STATS_STAGED:
        third = group + gl.minimum(2, my_rows - 1) * groups
        rstd, mean = gl.load(RSTD + group), gl.load(MEAN + group)
        rstd_1, mean_1 = gl.load(RSTD + second), gl.load(MEAN + second)
        rstd_2, mean_2 = rstd_1, mean_1
        if AHEAD == 2:
            rstd_2, mean_2 = gl.load(RSTD + third), gl.load(MEAN + third)
    mbarrier.wait(ready.index(0), 0)
    if STATS_STAGED:
        mean, rstd = _staged_stats(st.index(0), L)
    own = _publish_slice(xs.index(0), dys.index(0), w, mean, rstd,
                         SUMS + group.to(gl.int64) * ROW_SLOTS + part * SLOTS, ms.index(0), SR, L, L3, IS_RMS,
                         HAS_MASK, WARP_SUMS)  # fmt: skip
    own_1 = own
    if AHEAD == 2:
        mbarrier.wait(ready.index(1), 0)
        if STATS_STAGED:
            mean_1, rstd_1 = _staged_stats(st.index(1), L)
        own_1 = _publish_slice(xs.index(1), dys.index(1), w, mean_1, rstd_1,
                               SUMS + second.to(gl.int64) * ROW_SLOTS + part * SLOTS, ms.index(1), SR, L, L3,
                               IS_RMS, HAS_MASK, WARP_SUMS)  # fmt: skip
        fetched = _fetch_sums(SUMS + group.to(gl.int64) * ROW_SLOTS, at, wanted)
    for i in range(my_rows):
        row = group + i * groups
        stage = i % STAGES
        slots = SUMS + row.to(gl.int64) * ROW_SLOTS
        # the row AHEAD ahead published (the last row's again at the last steps: the same bits); the statistics of
        # the row after it loaded (unless staged)
        ahead = group + gl.minimum(i + AHEAD, my_rows - 1) * groups
        if not STATS_STAGED:
            further = group + gl.minimum(i + AHEAD + 1, my_rows - 1) * groups
            rstd_further = gl.load(RSTD + further)
            mean_further = gl.load(MEAN + further)
        if AHEAD == 2:
            following = group + gl.minimum(i + 1, my_rows - 1) * groups
            fetched_next = _fetch_sums(SUMS + following.to(gl.int64) * ROW_SLOTS, at, wanted)
        if AHEAD == 1 and FETCH_FIRST:  # this row's sums fetched before the next row's publish
            fetched = _fetch_sums(slots, at, wanted)
        ahead_stage = (i + AHEAD) % STAGES
        mbarrier.wait(ready.index(ahead_stage), ((i + AHEAD) // STAGES) & 1)
        if STATS_STAGED:
            mean_ahead, rstd_ahead = _staged_stats(st.index(ahead_stage), L)
        elif AHEAD == 2:
            rstd_ahead, mean_ahead = rstd_2, mean_2
        else:
            rstd_ahead, mean_ahead = rstd_1, mean_1
        own_ahead = _publish_slice(xs.index(ahead_stage), dys.index(ahead_stage), w, mean_ahead, rstd_ahead,
                                   SUMS + ahead.to(gl.int64) * ROW_SLOTS + part * SLOTS, ms.index(ahead_stage), SR,
                                   L, L3, IS_RMS, HAS_MASK, WARP_SUMS)  # fmt: skip
        if AHEAD == 1 and not FETCH_FIRST:
            # the slots' address taken again after the publish, as round 87's kernel took it: taken only at the step's
            # start, ptxas orders this form otherwise, and LayerNorm's without dB at 32768 x 16384 ran x0.976 (GPU run
            # 685); so the machine code of this form is round 87's, bit for bit (compiled for sm_90)
            slots = SUMS + row.to(gl.int64) * ROW_SLOTS
            fetched = _fetch_sums(slots, at, wanted)
        if WARP_SUMS:
            c1, c2 = _warp_row_means(fetched, slots, at, ROW_SLOTS, N, MAX_POLLS)
        else:
            c1, c2 = _row_means(fetched, slots, own, at, part, wanted, N, PARTS, MAX_POLLS)
        if STATS_STAGED:
            mean, rstd = _staged_stats(st.index(stage), L)
        x = xs.index(stage).load(L)
        xf = x.to(gl.float32)
        dy = _masked_dy(dys.index(stage), ms.index(stage), SR, L, L3, HAS_MASK)
        if IS_RMS:
            dx = rstd * (w * dy) - (rstd * rstd * rstd * c1) * xf
            dw += dy * (xf * rstd)
        else:
            xhat = (xf - mean) * rstd
            dx = (w * dy - (xhat * c1 + c2)) * rstd
            dw += dy * xhat
        if HAS_DBIAS:
            db += dy
        gl.store(DX + row.to(gl.int64) * N + col0 + offsets, dx.to(x.dtype))
        fence_async_shared()  # the reads above (the generic proxy) before the TMA's writes into the stage
        mbarrier.arrive(empty.index(stage), count=1)
        if AHEAD == 2:
            fetched = fetched_next
            own, own_1 = own_1, own_ahead
            if not STATS_STAGED:
                rstd, mean, rstd_1, mean_1, rstd_2, mean_2 = rstd_1, mean_1, rstd_2, mean_2, rstd_further, mean_further
        else:
            own = own_ahead
            if not STATS_STAGED:
                rstd, mean, rstd_1, mean_1 = rstd_1, mean_1, rstd_further, mean_further
    W_BITS: gl.constexpr = ws.dtype.primitive_bitwidth if W_SHARED else 0
    IN_L: gl.constexpr = not _scratch_fits(STAGES, SR, xs.dtype.primitive_bitwidth, HAS_MASK, W_BITS)
    _store_slice_partial(PARTIAL + group.to(gl.int64) * N + col0, dw, SR, L, IN_L)
    if HAS_DBIAS:
        _store_slice_partial(PARTIAL + (groups + group).to(gl.int64) * N + col0, db, SR, L, IN_L)


# a Hopper SM's shared memory a program (227 KB), and what ``_scratch_fits`` keeps free of it for the barriers and
# the row statistics' slots
SHARED_MEMORY = 232448
SHARED_SPARE = 1024


@gluon.constexpr_function
def _scratch_fits(STAGES, SR, X_BITS, HAS_MASK, W_BITS):
    """Whether the layout change of a slice's float32 partial (``_store_partial``: its scratch is the slice in
    float32, 32 KB for slices of 8192) fits in shared memory beside ``split_staged_kernel``'s buffers: ``STAGES`` of
    the slice's x and dy (and its mask bytes where ``HAS_MASK``) and its weights where staged (``W_BITS`` each; 0:
    read from global memory)."""
    stage = 2 * SR * 256 * X_BITS // 8 + (SR * 32 if HAS_MASK else 0)
    return STAGES * stage + SR * 256 * W_BITS // 8 + SR * 256 * 4 + SHARED_SPARE <= SHARED_MEMORY


@gluon.jit
def _store_slice_partial(row, values, SR: gl.constexpr, L: gl.constexpr, IN_L: gl.constexpr):
    """A slice's dW (dB) partial stored as ``_store_partial`` does, or where ``IN_L`` in ``L`` as it is: the layout
    change's scratch would not fit beside the stages (``_scratch_fits``: slices of 16384; the masked backward's 5
    stages). Each thread's 8 columns are then two 16-byte stores, every sector written in halves."""
    if IN_L:
        _store(row, values, 0, SR, L, SR)
    else:
        _store_partial(row, values, 0, SR, L, SR)


@gluon.jit
def _split_program(M, PARTS: gl.constexpr):
    """A program's place in a grid of rows split in ``PARTS`` slices (``split_staged_kernel``'s, the forward's): the
    groups of programs, its slice, its group ``g`` and its rows' count (rows ``g, g + groups, ...``)."""
    pid = gl.program_id(0)
    groups = gl.num_programs(0) // PARTS
    part = pid % PARTS
    group = pid // PARTS
    return groups, part, group, (M - group + groups - 1) // groups


@gluon.jit
def _stage_barriers(STAGES: gl.constexpr):
    """Each stage's two mbarriers, initialized: ``ready`` (its loads have landed) and ``empty`` (its readers are
    done with it)."""
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    return ready, empty


@gluon.jit
def split_staged_kernel(
    xd, dyd, md, W, MEAN, RSTD, DX, PARTIAL, SUMS, M, N,
    SR: gl.constexpr, L: gl.constexpr, PL: gl.constexpr, L3: gl.constexpr, PARTS: gl.constexpr,
    PARTS_P2: gl.constexpr, VALID: gl.constexpr, STAGES: gl.constexpr, ZERO_CENTERED: gl.constexpr,
    IS_RMS: gl.constexpr, HAS_DBIAS: gl.constexpr, MAX_POLLS: gl.constexpr, W_SHARED: gl.constexpr,
    AHEAD: gl.constexpr, FETCH_FIRST: gl.constexpr, HAS_MASK: gl.constexpr, WARP_SUMS: gl.constexpr,
    STATS_STAGED: gl.constexpr,
):  # fmt: skip
    """RMSNorm's or LayerNorm's dx ``[M, N]`` and float32 dW (dB) partials of rows split in ``PARTS`` slices of ``SR``
    rows of 256: program ``p`` takes slice ``p % PARTS`` of the rows ``g, g + groups, ...`` of its group ``g = p //
    PARTS`` (``groups`` = programs / PARTS; every program of the grid runs at once: one a SM). Its load warp stages
    the slice of x and dy by the TMA (descriptors as ``descriptors``', the box ``[SR, 256]``), ``STAGES`` rows in
    flight; its compute warps (``_split_compute``) read the slice's weights once and exchange each row's slice sums
    with the group's other programs through ``SUMS`` (int64 ``[M, PARTS]``, filled with ``SENTINEL`` before the
    launch) a row ahead. ``W``: the weights' descriptor (``W_SHARED``: the program stages its slice of them by the TMA
    first) or their pointer (contiguous; read from global memory). The partials: ``PARTIAL[0 or 1, g, columns of the
    slice]`` (``[1 or 2, groups, N]``). ``HAS_MASK`` (LayerNorm + clamped ReLU's backward): dy times the bits of the
    packed mask (uint8 ``[M, N / 8]``, rows contiguous; bit ``j`` of a byte column ``j`` of its 8), staged with x and
    dy by its descriptor ``md`` (``mask_descriptor``: viewed as ``[M * N / 256, 32]``, the box ``[SR, 32]``; without the
    mask a placeholder, not read). ``STATS_STAGED``: the load warp stages each row's mean and rstd with its slice
    (``_split_loader``), else the compute warps load them."""
    groups, part, group, my_rows = _split_program(M, PARTS)
    xs = gl.allocate_shared_memory(xd.dtype, [STAGES, SR, 256], xd.layout)
    dys = gl.allocate_shared_memory(xd.dtype, [STAGES, SR, 256], xd.layout)
    if HAS_MASK:
        ms = gl.allocate_shared_memory(md.dtype, [STAGES, SR, 32], md.layout)
    else:  # a placeholder, not read
        ms = dys
    ready, empty = _stage_barriers(STAGES)
    if STATS_STAGED:  # each stage's row's (mean, rstd)
        st = gl.allocate_shared_memory(gl.float32, [STAGES, 2], _PAIR_SHARED)
    else:  # a placeholder, not read
        st = ready
    if W_SHARED:
        ws = gl.allocate_shared_memory(W.dtype, [SR, 256], W.layout)
        wbar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(wbar, count=1)
        mbarrier.expect(wbar, SR * 256 * W.dtype.primitive_bitwidth // 8)
        tma.async_copy_global_to_shared(W, [part * SR, 0], wbar, ws)
    else:  # placeholders, not read
        ws = xs
        wbar = ready
    gl.warp_specialize(
        [
            (_split_compute, (xs, dys, ms, ws, ready, empty, wbar, W, MEAN, RSTD, DX, PARTIAL, SUMS, M, N, group,
                              groups, part, my_rows, st, SR, L, PL, L3, PARTS, PARTS_P2, STAGES, ZERO_CENTERED,
                              IS_RMS, HAS_DBIAS, MAX_POLLS, W_SHARED, AHEAD, FETCH_FIRST, HAS_MASK, WARP_SUMS,
                              STATS_STAGED)),
            (_split_loader, (xd, dyd, md, xs, dys, ms, ready, empty, group, groups, part, my_rows, MEAN, RSTD, st, SR,
                             VALID, STAGES, AHEAD, HAS_MASK, STATS_STAGED)),
        ],
        [1], [LOADER_REGISTERS],
    )  # fmt: skip


def parts(n: int, second_of_8: bool = False, fp16: bool = False) -> list[int]:
    """A row of n columns (a multiple of 256) as its parts' rows of 256, largest first, 0 where absent: n / 256's
    binary digits where it has at most 3 (13312 = 52 x 256 -> [32, 16, 4]); else its two largest and the rest rounded
    up to a power of 2, the rows of 256 past the row masked (13824 = 54 x 256 -> [32, 16, 8]: 4 parts, 32 + 16 + 4 +
    2, ran x0.91 of these 3 in GPU run 551, and 14848's 32 + 16 + 8 + 2 x0.96 of 32 + 16 + 16).

    ``second_of_8`` (LayerNorm's backward without dB, ``constexprs``): rows of 49-56 rows of 256, whose digits begin
    32 + 16, as 32 + 8 + 16, the last part padded (12800-14336 -> [32, 8, 16]; the second part no longer the larger).
    In turns against the digits (GPU runs 601-603): x1.11-1.16 at 4096 x 12800-14336 fp16, x1.09-1.14 at 2048 rows,
    x1.12-1.13 at 32768 x 12800-14336 bf16. Where ``fp16`` (x is float16) too, 12288 (48 rows) as 32 + 8 + 8: x1.04-1.14
    at 2048-32768 rows (runs 603-605); in bf16 x0.94-0.95 at 2048-32768 rows, so not there. Not taken: RMSNorm's second
    part of 8 (x0.999 at 12288; x0.988-0.998 at 4096 x 12800-14336 fp16, run 605); LayerNorm's with dB (x0.87 at
    12288; at 12800-14336 the staged kernel forced ran x0.89-0.98 of the split rows either way, dB in the compute warps,
    and x0.85-0.96 as 32 + 8 + 16 with dB in 4 warps of their own, run 610); 58-62 rows as 32 + 32 or 32 + 8 + 32
    (x0.96-1.01)."""
    if n <= 0 or n % COLUMNS:
        raise ValueError(f"n must be a positive multiple of {COLUMNS}, got {n}")
    rows = n // COLUMNS
    if second_of_8 and 49 <= rows <= 56:
        return [32, 8, 16]
    if second_of_8 and fp16 and rows == 48:
        return [32, 8, 8]
    digits = [1 << b for b in range(rows.bit_length() - 1, -1, -1) if rows >> b & 1]
    if len(digits) > MAX_PARTS:
        rest = sum(digits[2:])
        digits = digits[:2] + [1 << (rest - 1).bit_length()]
    return digits + [0] * (MAX_PARTS - len(digits))


def layout(rows: int, num_warps: int) -> gl.BlockedLayout:
    """A part's ``[rows, 256]`` over num_warps warps: the warps down its rows as far as they go, the rest across, and
    each thread's columns contiguous (8 halves, 16 bytes, where the warps are all down)."""
    rows = max(rows, 1)
    down = min(num_warps, rows)
    across = num_warps // down
    return gl.BlockedLayout([rows // down, COLUMNS // (32 * across)], [1, 32], [down, across], [1, 0])


def _cut_for_bytes(rows: int, num_warps: int) -> bool:
    """Whether ``layout`` cuts a slice of rows of 256 over num_warps warps so that ``mask_layout`` can see it by bytes:
    at least a row, warps that divide the rows or are divided by them, at most 8 warps across a row (a column each)."""
    down = min(num_warps, rows)
    return rows > 0 and not num_warps % down and not rows % down and num_warps // down <= 8


def mask_layout(rows: int, num_warps: int) -> gl.BlockedLayout:
    """A slice's ``[rows, 256]`` (``layout``) seen as ``[rows, 32, 8]``: each thread's consecutive columns along the
    last axis (the split staged kernels' clamped ReLU: this backward's ``_masked_dy``, the forward's
    ``norm_fwd_staged._fwd_masker``). Where the warps are all down the rows a thread holds a mask byte's 8 columns;
    where a part has fewer rows than warps (the rest across, ``layout``) it holds 4, 2 or 1 of them, and the lanes that
    share a byte lie beside each other (round 111). A ValueError where ``layout`` cannot cut the slice so
    (``_cut_for_bytes``)."""
    if not _cut_for_bytes(rows, num_warps):
        raise ValueError(f"the mask's bytes need the slice's rows cut over the warps: {rows} rows at {num_warps} warps")
    down = min(num_warps, rows)
    across = num_warps // down
    columns = COLUMNS // (32 * across)  # a thread's columns: 8, 4, 2 or 1 of a byte
    lanes = 8 // columns  # the lanes that share a byte
    return gl.BlockedLayout([rows // down, 1, columns], [1, 32 // lanes, lanes], [down, across, 1], [2, 1, 0])


def masked_parts(n: int, num_warps: int) -> bool:
    """Whether the whole-row kernel can take LayerNorm + clamped ReLU's backward at n columns in num_warps compute
    warps: rows of 256 whose every part (``parts``, as LayerNorm's with dB cuts it, and without dB) has a
    ``mask_layout``."""
    cuts = (parts(n), parts(n, second_of_8=True)) if not n % COLUMNS else ()
    return bool(cuts) and all(_cut_for_bytes(r, num_warps) for cut in cuts for r in cut if r)


def constexprs(
    n: int, num_warps: int, stages: int, zero_centered: bool, is_rms: bool = True, has_dbias: bool = False,
    db_warps: int = 0, db_registers: int = 0, fp16: bool = False, db_shared: int = 0, pair_scratch: bool = False,
    has_mask: bool = False,
) -> dict:  # fmt: skip
    """The kernel's constexpr arguments for rows of n columns, in its signature's order (``stages``: rows in flight a
    program, ``config.staged_stages``; ``db_warps``: dB's warps of its own, 0 for none: the compute warps sum it;
    ``db_registers``: theirs a thread; ``fp16``: x is float16, for ``parts``; ``db_shared``: the last parts, 0-2,
    whose dB the compute warps keep in shared memory, ``config.staged_db_shared``: none with dB warps or without dB).
    A ``db_shared`` other than 0-2, or above 0 where the row has no third part, raises a ValueError. ``has_mask``:
    LayerNorm + clamped ReLU's backward, its mask's bytes staged with each part (``L3A``-``L3C``: ``mask_layout``;
    dB summed by the compute warps, which mask dy, not by dB warps of its own): else a ValueError."""
    ra, rb, rc = parts(n, second_of_8=not is_rms and not has_dbias, fp16=fp16)
    if db_shared not in (0, 1, 2) or (db_shared and not rc):
        raise ValueError(f"db_shared must be 0-2, and 0 where the row has no third part ({[ra, rb, rc]}): {db_shared}")
    if has_mask and (is_rms or (has_dbias and db_warps)):
        raise ValueError("has_mask is LayerNorm's (LayerNorm + clamped ReLU's backward), its dB in the compute warps")
    la, lb, lc = (layout(r, num_warps) for r in (ra, rb, rc))
    l3a, l3b, l3c = (
        (mask_layout(r, num_warps) if has_mask and r else lay) for r, lay in zip((ra, rb, rc), (la, lb, lc))
    )
    dla, dlb, dlc = (layout(r, max(db_warps, 1)) for r in (ra, rb, rc))
    return dict(
        RA=ra, RB=rb, RC=rc, LA=la, LB=lb, LC=lc, DLA=dla, DLB=dlb, DLC=dlc, VALID=n // COLUMNS, STAGES=stages,
        ZERO_CENTERED=zero_centered, IS_RMS=is_rms, HAS_DBIAS=has_dbias, DB_WARPS=db_warps if has_dbias else 0,
        DB_REGISTERS=db_registers if has_dbias and db_warps else 0,
        DB_SHARED=db_shared if has_dbias and not db_warps else 0, PAIR_SCRATCH=pair_scratch and not is_rms,
        HAS_MASK=has_mask, L3A=l3a, L3B=l3b, L3C=l3c,
    )  # fmt: skip


def descriptors(x, dy, weight, part_rows: list[int]) -> list[TensorDescriptor]:
    """x's, dy's and the weights' descriptors, a part's each (the first part's where one is absent): x and dy (rows
    contiguous) viewed as ``[M * N / 256, 256]``, the weights (16 bits) as ``[N / 256, 256]``; the kernel's first
    arguments. ``split_staged_kernel``'s: one part, a slice's rows (``[slice_rows]``); the weights' (16 or 32 bits)
    where it stages them, none where it reads them from global memory (``weight`` None)."""
    m, n = x.shape
    tensors = [x.view(m * n // COLUMNS, COLUMNS), dy.view(m * n // COLUMNS, COLUMNS)]
    tensors += [] if weight is None else [weight.view(-1, COLUMNS)]
    return [box_descriptor(t, r or part_rows[0]) for t in tensors for r in part_rows]


def box_descriptor(t, box_rows: int) -> TensorDescriptor:
    """A TMA descriptor of ``t`` (2-D, rows contiguous: a view of rows of 256 columns or of their mask bytes), its box
    ``box_rows`` whole rows of it, unswizzled: the staged kernels' (``descriptors``, ``mask_descriptor``,
    ``norm_fwd_staged.descriptor``)."""
    shared = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8 * t.element_size(), rank=2)
    return TensorDescriptor(t, list(t.shape), list(t.stride()), [box_rows, t.shape[1]], shared)


def mask_descriptor(mask, box_rows: int) -> TensorDescriptor:
    """The packed mask's descriptor: uint8 ``[M, N / 8]``, rows contiguous (``N / 8`` bytes apart), viewed as ``[M * N
    / 256, 32]`` (a row of 256 columns' bytes), the box ``[box_rows, 32]``: a slice's (``split_staged_kernel``'s
    ``md``) or a part's (``norm_bwd_staged_kernel``'s, one a part)."""
    return box_descriptor(mask.view(-1, COLUMNS // 8), box_rows)


def descriptor_arguments(x, dy, weight, mask, part_rows: list[int], split: bool) -> list[TensorDescriptor]:
    """The staged kernels' leading arguments, their descriptors in their order. ``norm_bwd_staged_kernel``'s
    (``part_rows`` its parts' rows of 256, ``RA``-``RC``): x's, dy's and the weights' a part each (``descriptors``),
    then the packed mask's a part each (``mask_descriptor``; dy's in their place without a mask, not read). The split
    kernel's (``split``; ``part_rows`` a slice's, ``[SR]``): x's, dy's, the mask's (dy's without one) and the weights'
    where it stages them (``weight`` None where it reads them from global memory)."""
    head = descriptors(x, dy, weight, part_rows)
    if split:
        head.insert(2, mask_descriptor(mask, part_rows[0]) if mask is not None else head[1])
    elif mask is not None:
        head += [mask_descriptor(mask, r or part_rows[0]) for r in part_rows]
    else:  # dy's, again
        head += head[len(part_rows) : 2 * len(part_rows)]
    return head


def slices_constexprs(n: int, slice_n: int, num_warps: int, stages: int, ahead: int) -> dict:
    """The constexprs the split staged kernels (this backward's, ``norm_fwd_staged``'s forward) share, for rows of n
    columns in slices of ``slice_n`` (a multiple of 256 that divides n), ``stages`` rows in flight and ``ahead`` rows
    published ahead (1 or 2, fewer than ``stages``): a slice's rows of 256 and layout, the slices a row and their
    slots (a power of two of at least 2), the row's rows of 256."""
    if slice_n <= 0 or slice_n % COLUMNS or n % slice_n:
        raise ValueError(f"slice_n must be a multiple of {COLUMNS} that divides n = {n}, got {slice_n}")
    if ahead not in (1, 2) or stages <= ahead:
        raise ValueError(f"ahead must be 1 or 2 and fewer than stages = {stages}, got {ahead}")
    sr, slices = slice_n // COLUMNS, n // slice_n
    p2 = max(2, 1 << (slices - 1).bit_length())
    return dict(
        SR=sr, L=layout(sr, num_warps), PL=gl.BlockedLayout([p2], [32], [num_warps], [0]), PARTS=slices, PARTS_P2=p2,
        VALID=n // COLUMNS, STAGES=stages, AHEAD=ahead,
    )  # fmt: skip


def split_constexprs(n: int, slice_n: int, num_warps: int, stages: int, zero_centered: bool, is_rms: bool,
                     has_dbias: bool, max_polls: int, weights_shared: bool, ahead: int = 1,
                     fetch_first: bool = False, has_mask: bool = False, warp_sums: bool = False,
                     stats_staged: bool = False) -> dict:  # fmt: skip
    """``split_staged_kernel``'s constexpr arguments for rows of n columns in slices of ``slice_n``
    (``slices_constexprs``); ``weights_shared``: the weights staged by the TMA (their descriptor the kernel's ``W``);
    ``ahead``: the rows pass one runs ahead; ``fetch_first`` (one row ahead only): this row's sums fetched before the
    next row's publish; ``has_mask``: LayerNorm + clamped ReLU's backward (``L3``: ``mask_layout``, else ``L`` as a
    placeholder; a slice's rows of 256 a multiple of the warps, whole bytes a thread, else a ValueError);
    ``warp_sums``: the row sums published a warp each (``SUMS`` then ``[M, slices x num_warps]``); ``stats_staged``:
    each row's mean and rstd staged by the load warp with its slice."""
    if fetch_first and ahead != 1:
        raise ValueError(f"fetch_first orders the steps of one row ahead, got ahead = {ahead}")
    if has_mask and is_rms:
        raise ValueError("has_mask is LayerNorm's (LayerNorm + clamped ReLU's backward), not RMSNorm's")
    values = slices_constexprs(n, slice_n, num_warps, stages, ahead)
    if has_mask and values["SR"] % num_warps:  # a thread's 8 columns of its slice, whole bytes (timed so)
        rows = values["SR"]
        raise ValueError(f"the mask's bytes need the warps down the slice's rows: {rows} rows at {num_warps} warps")
    l3 = mask_layout(values["SR"], num_warps) if has_mask else values["L"]
    flags = dict(ZERO_CENTERED=zero_centered, IS_RMS=is_rms, HAS_DBIAS=has_dbias, MAX_POLLS=max_polls)
    flags |= dict(W_SHARED=weights_shared, FETCH_FIRST=fetch_first, HAS_MASK=has_mask, WARP_SUMS=warp_sums)
    flags |= dict(STATS_STAGED=stats_staged)
    return values | dict(L3=l3) | flags
