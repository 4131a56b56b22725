"""The words that name a thing in a line (``logstream.scoring.incident``): what few of a source's normal lines
hold, bounded, and saved with what it needs."""

from logstream.scoring.incident import WordCounts, same_pattern, shared_name


def test_a_name_is_a_word_few_normal_lines_hold_and_neither_a_level_nor_a_problem_word():
    words = WordCounts()
    for i in range(200):
        words.add(f"INFO worker {i % 3} spawned archiver" if i % 50 else "INFO reloaded config", limit=1000)
    names = words.names("ERROR worker archiver killed by SIGKILL, config failed", share=0.05,
                        problem_words=["failed", "killed by sigkill"])
    assert names == {"config"}  # held by 4 of 200 lines; worker and archiver by 196; ERROR a level
    assert words.names("ERROR worker archiver killed", share=0.05) == {"killed"}
    assert words.names("worker config", share=0.01) == frozenset()  # config: 2% of the lines is not few
    assert shared_name(frozenset({"config", "SIGKILL"}), "reload of config done") == "config"
    assert shared_name(frozenset({"config"}), "nothing alike") is None and shared_name(frozenset(), "config") is None


def test_the_counts_stay_bounded_and_keep_the_words_most_lines_hold():
    words = WordCounts()
    for i in range(5000):
        words.add(f"request {i} served", limit=100)  # every line a new id: the vocabulary grows without end
    assert len(words.counts) <= 100 and words.counts["request"] == words.counts["served"] == 5000
    assert words.names("request 77777 served", share=0.01) == {"77777"}


def test_saved_it_keeps_what_names_needs():
    words = WordCounts()
    for i in range(300):
        words.add(f"job {i} done by runner" if i % 100 else "job paused by operator", limit=1000)
    saved = words.as_json(share=0.01)
    assert set(saved["common"]) == {"job", "done", "runner"} and saved["lines"] == 300
    restored = WordCounts.from_json(saved)
    for line in ("job 12 paused by operator", "runner 9 done"):
        assert restored.names(line, 0.01) == words.names(line, 0.01)


def test_too_few_lines_name_nothing_and_patterns_compare_by_template_or_by_words_in_place():
    words = WordCounts()
    for _ in range(99):
        words.add("job done", limit=1000)
    assert words.names("archiver killed", share=0.01) == frozenset()  # 99 lines: any word is rare for want of lines
    words.add("job done", limit=1000)
    assert words.names("Archiver killed with 500 for the time being", share=0.01) == {"archiver", "killed", "time"}
    assert same_pattern((3, "a b"), (3, "c d"), 0.7) and not same_pattern((3, "x y"), (4, "x y"), 0.7)
    assert same_pattern((None, "worker alpha crashed hard"), (5, "worker beta crashed hard"), 0.7)
    assert not same_pattern((None, "worker alpha crashed hard"), (None, "worker alpha crashed"), 0.7)
    assert not same_pattern((None, "disk sda failed to read"), (None, "link eth0 failed to come up"), 0.7)
