"""Envelopes, one at a time: what is recognised, what is removed, what the envelope tells (time, year,
rank), what is assumed (the report's notes), and what is left alone."""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path

from logphase.logs.envelope import Unwrapper, sniff
from logphase.logs.follow import _LineSplitter
from logphase.logs.matcher import SourceMatcher
from logphase.logs.reader import Line, LogSource, read_lines, sniff_bytes
from logphase.packs import load_packs
from logphase.stacks.dumps import parse_dumps_in_text
from tests.conftest import run_json

SGLANG = [
    "[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB",
    "[2025-03-08 12:29:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=6.53 GB",
    "[2025-03-08 12:29:21 TP0] Memory pool end. avail mem=4.20 GB",
]


def lines_of(data: bytes) -> list[tuple[int, str, datetime | None, str | None]]:
    source = LogSource(name="pasted", open_stream=lambda: io.BytesIO(data))
    return [(line.number, line.text, line.stamp, line.rank) for line in read_lines(source)]


def names(head: list[str]) -> list[str]:
    return [envelope.name for envelope in sniff(head).layers]


def test_docker_timestamps_are_removed_and_give_each_line_its_time() -> None:
    # GIVEN `docker logs -t` output (RFC 3339, nanoseconds, Z)
    data = b"".join(f"2025-03-08T12:29:1{i}.123456789Z {line}\n".encode() for i, line in enumerate(SGLANG))
    # WHEN read THEN the lines are the server's, each with the envelope's time (to the microsecond)
    assert lines_of(data) == [
        (1, SGLANG[0], datetime(2025, 3, 8, 12, 29, 10, 123456), None),
        (2, SGLANG[1], datetime(2025, 3, 8, 12, 29, 11, 123456), None),
        (3, SGLANG[2], datetime(2025, 3, 8, 12, 29, 12, 123456), None),
    ]


def test_cri_partial_lines_are_joined_with_the_parts_that_follow() -> None:
    # GIVEN a CRI log where the runtime cut the second line into two `P` parts and an `F` part
    data = (
        b"2025-03-08T12:29:13.000000001Z stdout F " + SGLANG[0].encode() + b"\n"
        b"2025-03-08T12:29:20.000000001Z stderr P [2025-03-08 12:29:20 TP0] Load weight\n"
        b"2025-03-08T12:29:20.000000002Z stderr P  end. type=LlamaForCausalLM,\n"
        b"2025-03-08T12:29:20.000000003Z stderr F  dtype=torch.bfloat16, avail mem=6.53 GB\n"
        b"2025-03-08T12:29:21.000000001Z stdout F " + SGLANG[2].encode() + b"\n"
    )
    # WHEN read THEN three lines, the joined one numbered by the physical line it starts on
    assert [(number, text) for number, text, _, _ in lines_of(data)] == [(1, SGLANG[0]), (2, SGLANG[1]), (5, SGLANG[2])]


def test_kubectl_prefix_over_cri_is_unwrapped_layer_by_layer() -> None:
    # GIVEN `kubectl logs --prefix` lines around a CRI file's lines
    head = [f"[pod/sglang-7d9f-abcde/server] 2025-03-08T12:29:1{i}.5Z stdout F {line}" for i, line in enumerate(SGLANG)]
    # WHEN sniffed THEN both envelopes are found, outermost first, and removing them gives the log back
    assert names(head) == ["kubectl logs --prefix", "CRI container log"]
    unwrapper = Unwrapper(sniff(head))
    assert [u.text for number, text in enumerate(head) for u in unwrapper.feed(number, text)] == SGLANG


def test_a_markdown_quote_over_docker_timestamps() -> None:
    # GIVEN a `docker logs -t` excerpt quoted in an issue, an empty line quoted as `>` alone
    head = ["> 2025-03-08T12:29:13.1Z " + SGLANG[0], ">", "> 2025-03-08T12:29:20.1Z " + SGLANG[1]]
    # WHEN sniffed THEN the quote, then docker's stamps
    assert names(head) == ["markdown quote", "docker logs -t"]


def test_journald_short_gives_no_time_but_short_iso_does() -> None:
    # GIVEN the same line in journalctl's short (no year) and short-iso formats
    short = lines_of(b"Mar 08 12:29:13 gpu-node-01 python3[4242]: " + SGLANG[0].encode() + b"\n")
    iso = lines_of(b"2025-03-08T12:29:13+0000 gpu-node-01 python3[4242]: " + SGLANG[0].encode() + b"\n")
    # WHEN read THEN both give the line; only the stamp with a year is kept as the line's time
    assert short == [(1, SGLANG[0], None, None)]
    assert iso == [(1, SGLANG[0], datetime(2025, 3, 8, 12, 29, 13), None)]


def test_journald_short_in_another_locale_is_read_alike() -> None:
    # GIVEN journalctl's short format under German, French and Chinese locales (`%b` is the locale's month)
    for month in ("Dez", "déc.", "12月"):
        data = f"{month} 02 12:29:13 gpu-node-01 python3[4242]: {SGLANG[0]}\n".encode()
        # WHEN read THEN the journal's columns are removed, no time taken (the short format has no year)
        assert lines_of(data) == [(1, SGLANG[0], None, None)], month


def test_srun_labels_of_several_tasks_give_the_rank() -> None:
    # GIVEN `srun --label` output of two tasks, the labels padded to two digits
    data = b" 0: hello from rank zero\n11: hello from rank eleven\n 0: bye\n"
    # WHEN read THEN the label is removed and names the task as the line's rank
    assert lines_of(data) == [
        (1, "hello from rank zero", None, "task 0"),
        (2, "hello from rank eleven", None, "task 11"),
        (3, "bye", None, "task 0"),
    ]


def test_a_single_srun_task_label_names_no_rank() -> None:
    # GIVEN `srun --label` output of one task that runs a whole TP server (its lines carry their own ranks)
    data = b"".join(b"0: " + line.encode() + b"\n" for line in SGLANG)
    # WHEN read THEN the label is removed, but `0` is a task, not the rank of every line
    assert lines_of(data) == [(n, line, None, None) for n, line in enumerate(SGLANG, 1)]


def test_torchrun_tee_labels_with_unlabelled_agent_lines() -> None:
    # GIVEN torchrun --tee output of two local ranks with the elastic agent's own lines between them
    data = (
        b"[W socket.cpp:464] [c10d] The server socket has failed to bind.\n"
        b"[default0]:Traceback (most recent call last):\n"
        b"[default1]:Traceback (most recent call last):\n"
        b"[default0]:RuntimeError: CUDA error: out of memory\n"
    )
    # WHEN read THEN the labels are removed and give the local rank; the agent's line stays as it is
    assert [(text, rank) for _, text, _, rank in lines_of(data)] == [
        ("[W socket.cpp:464] [c10d] The server socket has failed to bind.", None),
        ("Traceback (most recent call last):", "local_rank 0"),
        ("Traceback (most recent call last):", "local_rank 1"),
        ("RuntimeError: CUDA error: out of memory", "local_rank 0"),
    ]


def test_mpirun_tag_output_labels_give_the_mpi_rank() -> None:
    # GIVEN Open MPI `mpirun --tag-output` of NCCL's INFO lines from ranks 2 and 4 (orte iof_base_output.c's
    # `[jobid,vpid]<stdout>:`, no space after it)
    data = (
        b"[1,2]<stdout>:node-a:2122:2137 [2] NCCL INFO NET/Socket: Using 2 threads and 8 sockets per thread\n"
        b"[1,4]<stdout>:node-b:1759:1773 [0] NCCL INFO Channel 00 : 4[1b0] -> 6[1d0] [send] via NET/Socket/0\n"
        b"[1,4]<stdout>:node-b:1759:1773 [0] NCCL INFO comm 0x5581 rank 4 nranks 8 - Init COMPLETE\n"
        b"[1,2]<stderr>:Traceback (most recent call last):\n"
    )
    # WHEN read THEN the tags are removed and name the MPI rank
    assert [(text[:26], rank) for _, text, _, rank in lines_of(data)] == [
        ("node-a:2122:2137 [2] NCCL ", "rank 2"),
        ("node-b:1759:1773 [0] NCCL ", "rank 4"),
        ("node-b:1759:1773 [0] NCCL ", "rank 4"),
        ("Traceback (most recent cal", "rank 2"),
    ]


def test_mpirun_tags_indented_inside_a_markdown_quote_are_still_mpiruns(tmp_path: Path) -> None:
    # GIVEN nccl-tests' two closing lines (common.cu's `# Out of bounds values : %d %s`, `# Avg bus bandwidth    : %g`)
    # under mpirun's `[1,0]<stdout>:` tag, quoted in a review: `>` then eight or nine spaces before each tag
    log = tmp_path / "quoted.log"
    log.write_text(
        ">         [1,0]<stdout>:# Out of bounds values : 0 OK\n"
        ">        [1,0]<stdout>:# Avg bus bandwidth    : 92.3405 \n"
    )
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the quote, the indentation and the tag are removed: the benchmark's own end line says it finished
    assert (report["system"], report["verdict"], report["furthest_phase"]) == ("nccl-tests", "finished", "serving")
    assert report["reason"] == "the job finished, as its own end line says: # Out of bounds values : 0 OK (line 1)"


def test_a_label_the_same_on_every_line_leaves_the_rank_to_the_inner_envelope() -> None:
    # GIVEN `srun --label` of one task (always `0: `) around mpirun --tag-output lines of MPI ranks 2 and 4
    data = (
        b"0: [1,2]<stdout>:node-a:2122:2137 [2] NCCL INFO NET/Socket: Using 2 threads and 8 sockets per thread\n"
        b"0: [1,4]<stdout>:node-b:1759:1773 [0] NCCL INFO Channel 00 : 4[1b0] -> 6[1d0] [send] via NET/Socket/0\n"
        b"0: [1,4]<stdout>:node-b:1759:1773 [0] NCCL INFO comm 0x5581 rank 4 nranks 8 - Init COMPLETE\n"
        b"0: [1,2]<stderr>:Traceback (most recent call last):\n"
    )
    # WHEN read THEN the task label, one for every line, names no rank: the MPI ranks do
    assert [rank for _, _, _, rank in lines_of(data)] == ["rank 2", "rank 4", "rank 4", "rank 2"]


def test_a_log_that_only_looks_like_an_envelope_in_a_line_or_two_is_left_alone() -> None:
    # GIVEN a plain log with one line that starts like an srun label and one like a compose prefix
    head = [SGLANG[0], "0: not a label", "web | not a service", SGLANG[1], SGLANG[2]]
    # WHEN sniffed THEN no envelope: a few lines do not make a wrapper
    assert names(head) == []


def test_python_logging_stamps_are_not_docker_desktop() -> None:
    # GIVEN a wrapper's own Python logging format, which starts with a date and a time like Docker Desktop
    head = [f"2025-03-07 23:50:2{i},532 - __main__ - INFO - {line}" for i, line in enumerate(SGLANG)]
    # WHEN sniffed THEN no envelope: the pack's prefix reads it (with its milliseconds)
    assert names(head) == []


def test_a_console_stamp_two_spaces_before_a_loggers_own_stamp_is_removed_with_both_spaces() -> None:
    # GIVEN a job console's `YYYY-MM-DD HH:MM:SS  ` before each line: Ray's driver lines (their own stamp) and a
    # traceback with its indented frame
    ray = "2026-03-31 10:51:52,906\tINFO cli.py:41 -- Job submission server address: http://127.0.0.1:8265"
    frame = '  File "/tmp/x.py", line 3, in <module>'
    lines = [ray, "Traceback (most recent call last):", frame, "RuntimeError: boom", ray]
    data = "".join(f"2026-03-31 10:51:5{i}  {line}\n" for i, line in enumerate(lines)).encode()
    # WHEN read THEN Ray's lines start at their own stamp; the others keep what follows the stamp's first space
    assert [text for _, text, _, _ in lines_of(data)] == [
        ray,
        " Traceback (most recent call last):",
        '   File "/tmp/x.py", line 3, in <module>',
        " RuntimeError: boom",
        ray,
    ]


def test_ray_prefix_of_one_task_is_removed_but_vllm_workers_are_left_to_the_pack() -> None:
    # GIVEN Ray's task prefix on every line, and vLLM's own worker prefixes (which carry the rank)
    ray = [f"(pid=4242, ip=10.0.0.12) {line}" for line in SGLANG]
    vllm = [
        f"(Worker_TP{i} pid=42{i}) INFO 11-24 11:43:54 [gpu_model_runner.py:3341] Model loading took 1 GiB"
        for i in range(3)
    ]
    # WHEN sniffed THEN Ray's is an envelope, vLLM's is not
    assert names(ray) == ["Ray"]
    assert names(vllm) == []


def test_a_hard_wrapped_paste_is_joined() -> None:
    # GIVEN a paste that cut every line longer than 80 columns
    long = "[2025-03-08 12:29:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=6.53 GB"
    lines = [long, "short line one", long.replace("6.53", "7.77"), "short line two"]
    pasted = [piece for line in lines for piece in (line[i : i + 80] for i in range(0, len(line), 80))]
    # WHEN sniffed and unwrapped THEN the column is found and the lines are whole again
    found = sniff(pasted)
    assert found.wrap_width == 80
    unwrapper = Unwrapper(found)
    out = [u.text for number, text in enumerate(pasted) for u in unwrapper.feed(number, text)]
    assert out + [u.text for u in unwrapper.end()] == lines


def test_a_log_whose_long_lines_all_have_one_length_is_not_a_hard_wrap() -> None:
    # GIVEN a log whose longest lines are all one template of one length, each followed by its like
    template = (
        "gpu-h100-07:5123{0}:5123{0} [{0}] NCCL INFO ncclCommInitRank comm 0x55d4a3c1ce40 rank {0} nranks 8 - Init"
    )
    head = [SGLANG[0], *(template.format(i) for i in range(8)), SGLANG[1]]
    # WHEN sniffed THEN no hard wrap is assumed
    assert sniff(head).wrap_width is None


def test_fixed_width_records_before_another_writers_record_are_no_hard_wrap() -> None:
    # GIVEN a console copy (CloudWatch's table: a stamp column, `  | ` rules) of a trainer's fixed-width step lines,
    # each followed by a table rule or by torch's c10 record of another rank, the longest lines all of one length
    step = (
        "2024-08-23T21:52:{0}.473Z | pytorch_lightning - INFO - RANK 0 - on_train_batch_end - EPOCH 1 BATCH {1}/inf"
        "(0.00%): train_loss=0.08913; train_rec=0.77778; lr=0.0000499696"
    )
    pasted = [
        step.format(39, 70),
        "-- | --",
        "  | " + step.format(48, 80),
        "  | 2024-08-23T22:22:50.870Z | [rank6]:[E ProcessGroupNCCL.cpp:563] [Rank 6] Watchdog caught collective",
    ]
    # WHEN sniffed with the packs (they decide the learned columns) and unwrapped
    found = sniff_bytes("".join(line + "\n" for line in pasted).encode(), packs=load_packs())
    unwrapper = Unwrapper(found)
    out = [u.text for number, text in enumerate(pasted) for u in unwrapper.feed(number, text)]
    out += [u.text for u in unwrapper.end()]
    # THEN no line is joined to the next: the rank's record starts a record of its own, not a cut line's rest
    assert found.wrap_width is None
    assert [text[:25] for text in out] == [
        "pytorch_lightning - INFO ",
        "-- | --",
        "pytorch_lightning - INFO ",
        "[rank6]:[E ProcessGroupNC",
    ]


def test_an_export_newest_first_is_read_in_time_order_and_says_so(tmp_path: Path) -> None:
    # GIVEN a Loki export (time, labels, line; tab-separated) listing the newest line first
    rows = [f'2025-03-08T12:29:1{i}.000000000Z\t{{pod="sglang-0"}}\t{line}' for i, line in enumerate(SGLANG)]
    log = tmp_path / "export.tsv"
    log.write_text("\n".join(reversed(rows)) + "\n")
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the phases run forward in time, and the notes say what was assumed
    assert [(p["phase"], p["start_line"]) for p in report["phases"]][:2] == [("weight_load", 1), ("kv_cache", 3)]
    assert f"{log}: lines unwrapped from: log export (tab-separated) (found in the first lines)" in report["notes"]
    assert (
        f"{log}: the export lists the newest line first: read in reverse, lines numbered in time order"
        in report["notes"]
    )


def test_the_envelope_gives_a_year_less_vllm_stamp_its_year(tmp_path: Path) -> None:
    # GIVEN vLLM lines (`INFO 12-20 10:25:18`, no year) collected with `docker logs -t` in 2023
    plain = Path("fixtures/logs/vllm/v0-tp2-ready.log").read_text().splitlines()[:12]
    log = tmp_path / "docker.log"
    log.write_text("".join(f"2023-12-20T10:25:{18 + i // 4:02d}.000000000Z {line}\n" for i, line in enumerate(plain)))
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the phases are in 2023, the envelope's year, not the year of the analysis
    assert report["phases"][0]["start"].startswith("2023-12-20 10:25:")


def test_an_unstamped_line_takes_the_envelope_time_on_the_log_own_clock() -> None:
    # GIVEN a server logging local time (UTC-8) under `docker logs -t` (UTC), then a progress bar with no time
    matcher = SourceMatcher(load_packs(), datetime(2026, 1, 1))
    matcher.match_line(Line(1, SGLANG[0], 0, stamp=datetime(2025, 3, 8, 20, 29, 13)))
    bar = "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.00s/it]"
    # WHEN the bar is matched with its envelope's time
    matcher.match_line(Line(2, bar, 0, stamp=datetime(2025, 3, 8, 20, 29, 15)))
    # THEN its time is the envelope's, moved by the offset the stamped line showed: 2 s later on the log's clock
    assert matcher.last_time == datetime(2025, 3, 8, 12, 29, 15)


def test_a_followed_log_is_unwrapped_as_it_arrives() -> None:
    # GIVEN `kubectl logs -f --timestamps` output arriving in two pieces, the second cutting a line
    data = b"".join(f"2025-03-08T12:29:1{i}.000000001Z {line}\n".encode() for i, line in enumerate(SGLANG))
    splitter = _LineSplitter()
    # WHEN the watcher's splitter reads the pieces
    lines = splitter.feed(data[:100]) + splitter.feed(data[100:]) + splitter.end_line()
    # THEN the lines are the server's, with the envelope's time
    assert [(line.text, line.stamp) for line in lines] == [
        (text, datetime(2025, 3, 8, 12, 29, 10 + i)) for i, text in enumerate(SGLANG)
    ]


def test_the_note_names_the_envelopes_inside_out(tmp_path: Path) -> None:
    # GIVEN a CRI file's lines under `kubectl logs --prefix`
    log = tmp_path / "pod.log"
    log.write_text(
        "".join(f"[pod/sglang-0/server] 2025-03-08T12:29:1{i}.5Z stdout F {t}\n" for i, t in enumerate(SGLANG))
    )
    # WHEN analysed THEN the note says what was unwrapped, the innermost envelope first
    _, report = run_json("analyze", "--post-mortem", str(log))
    assert report["notes"] == [
        f"{log}: lines unwrapped from: CRI container log inside kubectl logs --prefix (found in the first lines)"
    ]


def test_srun_labelled_dumps_of_two_tasks_interleaved_stay_apart() -> None:
    # GIVEN faulthandler dumps of two srun tasks, interleaved line by line under their labels
    task0 = [
        "Fatal Python error: Aborted",
        "",
        "Thread 0x00007f01 (most recent call first):",
        '  File "/app/train.py", line 10 in step',
        '  File "/app/train.py", line 20 in main',
    ]
    task1 = [
        "Fatal Python error: Aborted",
        "",
        "Thread 0x00007f02 (most recent call first):",
        '  File "/app/train.py", line 11 in wait',
        '  File "/app/train.py", line 21 in main',
    ]
    text = [
        f"{task}: {line}" for pair in zip(task0, task1, strict=True) for task, line in zip((0, 1), pair, strict=True)
    ]
    # WHEN parsed
    snapshots = parse_dumps_in_text(text)
    # THEN one process per task, each with its own frames
    assert sorted((s.rank, [f.function for t in s.threads for f in t.frames]) for s in snapshots) == [
        ("task 0", ["step", "main"]),
        ("task 1", ["wait", "main"]),
    ]


def test_the_rank_of_an_srun_label_names_the_failing_task(tmp_path: Path) -> None:
    # GIVEN a two-task srun job whose task 1 crashed with a CUDA out-of-memory error
    log = tmp_path / "job.log"
    log.write_text(
        "0: [2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB\n"
        "1: [2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB\n"
        "1: Traceback (most recent call last):\n"
        '1:   File "/app/model_runner.py", line 10, in load_model\n'
        "1: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the crash is task 1's
    assert (report["verdict"], report["root_cause"]["rank"]) == ("crashed", "rank 1")


def test_vllm_own_process_tags_are_its_format_not_a_ray_envelope() -> None:
    # GIVEN a vLLM serving log that is nearly all API-server lines (its own `(APIServer pid=N) ` tag,
    # and the `ApiServer_N` tags of --api-server-count), and a Ray actor's output
    vllm = ["(APIServer pid=1) INFO 05-10 16:00:11 [loggers.py:111] Engine 000: Avg prompt throughput: 1.0"] * 20
    api_n = ["(ApiServer_7 pid=161396) INFO 05-10 16:00:11 [api_server.py:1] Started server process"] * 20
    ray = ["(RayWorkerWrapper pid=123) hello from a ray actor"] * 20
    # WHEN sniffed with the shipped packs' process tags
    tags = load_packs(check_examples=False, line_rules=False).process_tags
    # THEN vLLM's lines carry no envelope (its pack reads the tag), the Ray actor's do
    assert sniff(vllm, tags).layers == () and sniff(api_n, tags).layers == ()
    assert [layer.name for layer in sniff(ray, tags).layers] == ["Ray"]


def test_a_pack_that_names_its_process_tags_keeps_them_from_being_a_ray_envelope(tmp_path: Path) -> None:
    # GIVEN a log of one process that tags its lines `(Gateway pid=N) `, as Ray's log monitor tags an actor's
    log = tmp_path / "gateway.log"
    log.write_text("".join(f"(Gateway pid=77) [2025-03-08 12:29:{n:02d} TP0] Load weight begin.\n" for n in range(10)))
    # AND a pack of the user's that says `Gateway` is its system's own process tag
    pack = tmp_path / "gateway.toml"
    pack.write_text('[pack]\nname = "gateway"\nschema = 1\nsystems = ["gateway"]\nprocess_tags = ["Gateway"]\n')
    # WHEN analysed without the pack, and with it
    _, without = run_json("analyze", "--post-mortem", str(log))
    _, with_pack = run_json("analyze", "--post-mortem", "--patterns", str(pack), str(log))
    # THEN without it the tag is read as a Ray envelope and removed; with it the lines are left as they are
    unwrapped = f"{log}: lines unwrapped from: Ray (found in the first lines)"
    assert unwrapped in without["notes"]
    assert unwrapped not in with_pack["notes"]


def test_journald_short_under_japanese_and_korean_locales_pads_the_month() -> None:
    # GIVEN journalctl's short format under ja_JP and ko_KR, whose `%b` for May is glibc's ` 5月` / ` 5월`
    for month in (" 5月", " 5월", "12월"):
        data = f"{month} 02 12:29:13 gpu-node-01 python3[4242]: {SGLANG[0]}\n".encode()
        # WHEN read THEN the journal's columns are removed, the leading space of the month with them
        assert lines_of(data) == [(1, SGLANG[0], None, None)], month


# A crash as SGLang prints it: a record, a traceback whose frames are indented, and a capture bar redrawn with `\r`
CRASH = [
    "[2025-03-08 12:29:21 TP0] Capture cuda graph begin. This can take up to several minutes.",
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1748, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    "RuntimeError: CUDA error: out of memory",
]
BAR = ["Capturing batches (bs=8):  50%|█████     | 1/2 [00:01<00:01,  1.00s/it]", "Capturing batches (bs=4): 100%|"]


def test_docker_stamps_on_record_lines_only_are_removed_where_they_are() -> None:
    # GIVEN a log UI's copy of `docker logs -t`: the time on each record's first line only, not on a traceback's
    # indented frames nor on a bar's redraws, which the browser showed as lines of their own
    stamp = "2025-03-08T12:29:2{}.123456789Z "
    pasted = [
        stamp.format(1) + CRASH[0],
        stamp.format(2) + BAR[0],
        BAR[1],
        stamp.format(3) + CRASH[1],
        CRASH[2],
        CRASH[3],
        stamp.format(4) + CRASH[4],
    ]
    # WHEN read THEN docker's envelope is found and removed from the stamped lines; the others are as they were
    found = lines_of("".join(f"{line}\n" for line in pasted).encode())
    assert [text for _, text, _, _ in found] == [CRASH[0], *BAR, *CRASH[1:]]
    # AND a stamped line has the envelope's time, a bare one none of its own
    assert [stamp is not None for _, _, stamp, _ in found] == [True, True, False, True, False, False, True]


def test_a_stamp_on_a_few_unindented_lines_of_many_is_no_envelope() -> None:
    # GIVEN TGI's own tracing lines (RFC 3339 first), and records without it that start flush left: a traceback's
    # header and exception line
    head = [
        "2024-03-14T13:19:25.453070Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be ready...",
        "2024-03-14T13:19:25.553183Z ERROR shard-manager: text_generation_launcher: Shard complete standard error:",
        "Traceback (most recent call last):",
        '  File "/opt/conda/bin/text-generation-server", line 8, in <module>',
        "    sys.exit(app())",
        "RuntimeError: Not enough memory to handle 4096 prefill tokens.",
        "Error: ShardCannotStart",
        "2024-03-14T13:19:25.653183Z ERROR text_generation_launcher: Shard 2 failed to start",
    ]
    # WHEN sniffed THEN no envelope: three records of six carry no stamp
    assert names(head) == []


def test_markdown_escapes_of_a_paste_through_html_are_undone() -> None:
    # GIVEN a traceback as an HTML-to-markdown converter wrote it (turndown: `\_ \* \[ \]` everywhere)
    plain = [
        "[2025-03-08 12:29:21 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/lib/python3/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl',
        "    return self._call_impl(*args, **kwargs)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ]
    escaped = [
        "\\[2025-03-08 12:29:21 TP0\\] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/lib/python3/torch/nn/modules/module.py", line 1736, in \\_wrapped\\_call\\_impl',
        "    return self.\\_call\\_impl(\\*args, \\*\\*kwargs)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ]
    # WHEN read THEN the lines are the log's
    assert [text for _, text, _, _ in lines_of("".join(f"{line}\n" for line in escaped).encode())] == plain
    # AND so are Google Docs' (`\-`, `\=` escaped too, each line ending in a hard break)
    docs = ["\\[2024-12-05 15:50:42\\] INFO \\- Focal length \\= 6.09  ", "Next line  ", "Last \\_ line  "]
    texts = [text for _, text, _, _ in lines_of("".join(f"{line}\n" for line in docs).encode())]
    assert texts == ["[2024-12-05 15:50:42] INFO - Focal length = 6.09", "Next line", "Last _ line"]


def test_html_entities_of_a_paste_written_as_html_are_undone() -> None:
    # GIVEN a traceback pasted inside an HTML block, written with entities
    data = b"  File &quot;launch_server.py&quot;, line 14, in &lt;module&gt;\nValueError: a &amp; b\n"
    # WHEN read THEN the lines are the log's
    assert [text for _, text, _, _ in lines_of(data)] == [
        '  File "launch_server.py", line 14, in <module>',
        "ValueError: a & b",
    ]


def test_a_log_own_backslashes_among_bare_brackets_stay() -> None:
    # GIVEN a log with JSON's escaped quotes and a Windows path, and bare brackets and underscores around them
    data = (
        b'[2025-03-08 12:29:21] {\\"model_path\\": \\"C:\\\\models\\\\qwen\\"}\n'
        b"[2025-03-08 12:29:22] max_len=\\[4096\\]\n"
    )
    # WHEN read THEN nothing is unescaped
    assert [text for _, text, _, _ in lines_of(data)] == [line for line in data.decode().splitlines()]


def test_a_hard_wrapped_log_collected_again_is_joined_inside_its_envelopes() -> None:
    # GIVEN a log cut at 80 columns, then each of its pieces written to the journal (its stamp on every piece)
    long = "[2025-03-08 12:29:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=6.53 GB"
    lines = [long, "short line one", long.replace("6.53", "7.77"), "short line two"]
    pieces = [piece for line in lines for piece in (line[i : i + 80] for i in range(0, len(line), 80))]
    pasted = [f"Mar 08 12:29:{20 + n:02d} gpu-node-01 python3[4242]: {piece}" for n, piece in enumerate(pieces)]
    # WHEN sniffed and unwrapped THEN the journal comes off each piece and the cut lines are whole again
    found = sniff(pasted)
    assert (names(pasted), found.wrap_width, found.wrap_inside) == (["journald"], 80, True)
    unwrapper = Unwrapper(found)
    out = [u.text for number, text in enumerate(pasted) for u in unwrapper.feed(number, text)]
    assert out + [u.text for u in unwrapper.end()] == lines


def test_a_hard_wrapped_log_behind_empty_tab_cells_is_joined_inside_them() -> None:
    # GIVEN a log cut at 80 columns, then copied from a web table with an empty first cell (a tab) on every piece
    long = "[2025-03-08 12:29:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=6.53 GB"
    lines = [long, "[2025-03-08 12:29:21 TP0] short", long.replace("6.53", "7.77"), "[2025-03-08 12:29:22 TP0] end"]
    pasted = ["\t" + piece for line in lines for piece in (line[i : i + 80] for i in range(0, len(line), 80))]
    # WHEN sniffed with packs that read the server's stamped lines
    found = sniff(pasted, reads=lambda line: line.startswith("[2025-"))
    # THEN the tab is a column, the cut is inside it, and the lines are whole again
    assert ([layer.name for layer in found.layers], found.wrap_width, found.wrap_inside) == (
        ["empty tab-separated cells"],
        80,
        True,
    )
    unwrapper = Unwrapper(found)
    out = [u.text for number, text in enumerate(pasted) for u in unwrapper.feed(number, text)]
    assert out + [u.text for u in unwrapper.end()] == lines


def test_a_ray_actor_named_by_its_repr_is_an_envelope() -> None:
    # GIVEN Ray's prefix where the actor's class defines `__repr__` (Ray prints the repr as the actor's name:
    # `(MegatronPolicyWorker[rank=8] pid=3294808, ip=10.109.19.209) `), on every line of a faulthandler dump
    tag = "(MegatronPolicyWorker[rank=8] pid=3294808, ip=10.109.19.209) "
    dump = [
        "Fatal Python error: Aborted",
        "",
        "Thread 0x0000ff67b3f7f180 (most recent call first):",
        "  <no Python frame>",
    ]
    # WHEN sniffed and read THEN it is Ray's envelope, and the lines are the dump's
    assert names([tag + line for line in dump]) == ["Ray"]
    data = "".join(f"{tag}{line}\n" for line in dump).encode()
    assert [text for _, text, _, _ in lines_of(data)] == dump


def test_a_ray_data_map_actor_named_with_nested_parentheses_is_an_envelope() -> None:
    # GIVEN Ray Data's map actor tag: its repr is `MapWorker({op name})` and the operator's name holds its function's
    # (`MapBatches(fn)`, fused operators joined by `->`), around a vLLM engine's own process tag
    for actor in ("MapWorker(MapBatches(vLLMEngineStageUDF))", "MapWorker(ReadParquet->MapBatches(tokenize))"):
        tag = f"({actor} pid=4385) "
        engine = [
            "(EngineCore_DP0 pid=6448) INFO 02-12 14:23:20 [backends.py:548] Dynamo bytecode transform time: 31.20 s",
            "(EngineCore_DP0 pid=6448) INFO 02-12 15:00:36 [monitor.py:34] torch.compile takes 2222.52 s in total",
        ]
        # WHEN sniffed and read THEN it is Ray's envelope, and the lines are the engine's with their own tag
        assert names([tag + line for line in engine]) == ["Ray"]
        data = "".join(f"{tag}{line}\n" for line in engine).encode()
        assert [text for _, text, _, _ in lines_of(data)] == engine


def test_a_ray_actor_name_with_unbalanced_parentheses_is_not_an_envelope() -> None:
    # GIVEN lines opening with a parenthesis that does not close before `pid=` (no actor's repr Ray prints)
    lines = [f"(MapWorker(MapBatches(f) pid=1) {line}" for line in SGLANG]
    # WHEN sniffed THEN nothing is taken off
    assert names(lines) == []


def test_ray_serve_replica_tags_with_colons_stay_the_packs() -> None:
    # GIVEN one Ray Serve replica's tag (`ServeReplica:app:deployment`), which the ray pack reads as a writer
    lines = [f"(ServeReplica:default:LLMServer pid=522791) {line}" for line in SGLANG]
    # WHEN sniffed THEN no envelope is taken off
    assert names(lines) == []


def test_torchserve_model_log_is_unwrapped_and_gives_the_time() -> None:
    # GIVEN a model worker's stdout as TorchServe's frontend logs it (log4j2 `%d{ISO8601} [%-5p] %t %c - %m%n`)
    data = b"".join(
        f"2024-10-07T22:54:5{i},595 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - {line}\n".encode()
        for i, line in enumerate(SGLANG)
    )
    # WHEN read THEN the lines are the server's, each with the log4j stamp's time (milliseconds)
    assert lines_of(data) == [
        (1, SGLANG[0], datetime(2024, 10, 7, 22, 54, 50, 595000), None),
        (2, SGLANG[1], datetime(2024, 10, 7, 22, 54, 51, 595000), None),
        (3, SGLANG[2], datetime(2024, 10, 7, 22, 54, 52, 595000), None),
    ]


def test_lines_pasted_as_inline_code_lose_the_backticks() -> None:
    # GIVEN each line in markdown's inline code, a blank line between them, and one with a backtick of its own
    # written as CommonMark says (two backticks and a space of padding)
    own = "[2025-03-08 12:29:22 TP0] Capture cuda graph begin. This can take up to several minutes. `ok`"
    data = ("".join(f"`{line}`\n\n" for line in SGLANG) + f"`` {own} ``\n").encode()
    # WHEN read THEN the lines are the log's, and the report's notes say the marks were removed
    assert [text for _, text, _, _ in lines_of(data) if text] == [*SGLANG, own]
    envelopes = sniff(data.decode().splitlines())
    assert envelopes.inline_code and not envelopes.prefixes_only
    assert any("inline code" in note for note in envelopes.notes("pasted"))


def test_a_log_with_a_few_backticked_lines_keeps_them() -> None:
    # GIVEN a log whose own lines hold code spans in two of five lines (a server quoting a flag)
    lines = [*SGLANG, "`--disable-cuda-graph` was set", "`--tp 2` is the tensor parallel size"]
    # WHEN sniffed THEN nothing is taken as inline code
    assert not sniff(lines).inline_code


# torchrun's launch warning (torch/distributed/run.py) and a ulimit listing, as a SageMaker job writes them
ULIMITS = ["core file size (blocks, -c) unlimited", "open files (-n) 65536", "stack size (kbytes, -s) 65536"]


def test_cloudwatch_stamps_on_lines_of_their_own_date_the_lines_under_them() -> None:
    # GIVEN CloudWatch's console copied: each event's time (RFC 3339, milliseconds, Z) on a line above its text
    pasted = [
        "2024-12-04T05:26:25.055Z",
        ULIMITS[0],
        "2024-12-04T05:26:25.056Z",
        ULIMITS[1],
        "2024-12-04T05:26:27.056Z",
        ULIMITS[2],
    ]
    # WHEN read
    found = lines_of("".join(f"{line}\n" for line in pasted).encode())
    # THEN the stamps are no lines: each line is its text, on its own number, with the time above it
    assert found == [
        (2, ULIMITS[0], datetime(2024, 12, 4, 5, 26, 25, 55000), None),
        (4, ULIMITS[1], datetime(2024, 12, 4, 5, 26, 25, 56000), None),
        (6, ULIMITS[2], datetime(2024, 12, 4, 5, 26, 27, 56000), None),
    ]
    # AND the sniff names the layout, which the plain path reads (a line's time is on the line above it)
    assert names(pasted) == ["a stamp on a line of its own above the lines it dates"]
    assert not sniff(pasted).prefixes_only


def test_a_grafana_stamp_and_its_tab_dates_every_line_under_it_up_to_the_next() -> None:
    # GIVEN Grafana's Loki view copied: `date time<TAB>` on a line, the event's lines under it (a traceback's frames
    # under the one stamp of their event), a line above the first stamp (the excerpt's cut)
    pasted = [
        SGLANG[0],
        "2025-03-08 21:29:20\t",
        CRASH[1],
        "2025-03-08 21:29:21\t",
        CRASH[2],
        CRASH[3],
        "2025-03-08 21:29:22\t",
        CRASH[4],
    ]
    # WHEN read
    found = lines_of("".join(f"{line}\n" for line in pasted).encode())
    # THEN the stamp lines are gone, and each line has the time of the stamp above it (none above the first)
    assert [(number, text) for number, text, _, _ in found] == [
        (1, SGLANG[0]),
        (3, CRASH[1]),
        (5, CRASH[2]),
        (6, CRASH[3]),
        (8, CRASH[4]),
    ]
    assert [stamp for _, _, stamp, _ in found] == [
        None,
        datetime(2025, 3, 8, 21, 29, 20),
        datetime(2025, 3, 8, 21, 29, 21),
        datetime(2025, 3, 8, 21, 29, 21),
        datetime(2025, 3, 8, 21, 29, 22),
    ]


def test_a_stray_stamp_line_in_a_log_is_a_line_of_the_log() -> None:
    # GIVEN a job's output with one `date -Is` among its lines, and another with two
    once = [SGLANG[0], "2025-03-08T12:29:19+00:00", *SGLANG[1:]]
    twice = ["2025-03-08T12:29:10+00:00", *SGLANG, *ULIMITS, "2025-03-08T12:31:00+00:00"]
    for head in (once, twice):
        # WHEN sniffed and read THEN no envelope: every line is read as it is, the stamps too
        assert names(head) == []
        assert [text for _, text, _, _ in lines_of("".join(f"{line}\n" for line in head).encode())] == head


def test_a_stamp_line_under_each_line_of_the_longest_length_is_no_hard_wrap() -> None:
    # GIVEN CloudWatch's copy of a log whose long lines share one length (each followed by the next event's stamp)
    long = [
        f"[2025-03-08 12:29:1{i} TP0] max_total_num_tokens=201681, chunked_prefill_size=8192, x={i}" for i in range(4)
    ]
    pasted = [part for i, line in enumerate(long) for part in (f"2025-03-08T12:29:1{i}.000Z", line)]
    # WHEN read THEN no line is joined to the stamp under it
    assert [text for _, text, _, _ in lines_of("".join(f"{line}\n" for line in pasted).encode())] == long
    assert sniff(pasted).wrap_width is None


def test_docker_stamps_of_empty_lines_between_the_lines_are_docker_s() -> None:
    # GIVEN `docker logs -t` of a log with an empty line after each line: docker writes `<stamp> ` alone for those
    stamps = [f"2025-03-08T12:29:1{i}.123456789Z " for i in range(6)]
    pasted = [stamp + text for stamp, text in zip(stamps, [SGLANG[0], "", SGLANG[1], "", SGLANG[2], ""], strict=True)]
    # WHEN sniffed and read THEN docker's envelope is found (not stamps on lines of their own), each line its own time
    assert names(pasted) == ["docker logs -t"]
    found = lines_of("".join(f"{line}\n" for line in pasted).encode())
    assert [(number, text) for number, text, _, _ in found if text] == [(1, SGLANG[0]), (3, SGLANG[1]), (5, SGLANG[2])]
    assert found[2][2] == datetime(2025, 3, 8, 12, 29, 12, 123456)


def test_a_paste_whose_converter_escaped_brackets_but_not_underscores_inside_words_is_unescaped() -> None:
    # GIVEN vLLM lines pasted through a converter that escapes markdown only where it could be read as markdown
    # (Discourse: every `[` and `]` escaped, an underscore inside a word, which opens no emphasis, left bare), and the
    # same lines with one underscore at a word's edge left bare for every escape (a log's own backslashes)
    escaped = [
        "(EngineCore pid=258) INFO 04-24 10:21:03 \\[default_loader.py:384\\] Loading weights took 0.65 seconds",
        "(EngineCore pid=258) INFO 04-24 10:21:10 \\[backends.py:1051\\] Using cache directory: "
        "/root/.cache/vllm/torch_compile_cache/c7/rank_0_0/backbone for vLLM's torch.compile",
    ]
    edged = [line.replace("backbone", "_backbone_ x_") for line in escaped]
    # WHEN each is sniffed
    found, bare = sniff(escaped), sniff(edged)
    # THEN the first is markdown-escaped; the bare edges of the second keep it as it is
    assert found.markdown_escaped
    assert not bare.markdown_escaped
