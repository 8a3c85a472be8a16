"""The in-memory file system's search: with a word index (chained_lookup's corpus) it finds exactly the lines a
line-by-line scan finds, in the same order, also after writes and in copies."""
import copy
import random

from tasks.memfs import MemoryFS, _scan

LINE_BREAKS_AND_SPACES = "ab c\n\r\t\x1c\u2028"


def scanned(fs: MemoryFS, text: str, limit: int) -> list[tuple[str, int]]:
    return _scan(sorted(fs.files.items()), text, limit)


def test_indexed_search_finds_what_a_line_by_line_scan_finds():
    """Random files (with every kind of line break and whitespace), writes into copies, texts with and without
    whitespace, several limits: the indexed search gives the scan's hits."""
    rng = random.Random(7)
    checked = 0
    for _ in range(1500):
        files = {f"d/{rng.choice('xyzw')}{i}.txt": "".join(
            rng.choice(LINE_BREAKS_AND_SPACES if rng.random() < 0.3 else "abc\n ") for _ in range(rng.randint(0, 40)))
            for i in range(rng.randint(0, 6))}
        original = MemoryFS(files, indexed=True)
        changed = copy.deepcopy(original)
        for _ in range(rng.randint(0, 3)):
            changed.write(rng.choice([*files, "notes/n.md", "d/a.txt"]), "".join(rng.choice("abc\n ") for _ in range(30)))
        for fs in (original, changed):
            for _ in range(8):
                text = "".join(rng.choice("abc \n\u2028" if rng.random() < 0.2 else "abc") for _ in range(rng.randint(0, 3)))
                limit = rng.choice([1, 2, 3, 20])
                assert fs.search(text, limit) == scanned(fs, text, limit), (text, limit, fs.files)
                checked += 1
    assert checked == 1500 * 2 * 8


def test_a_copy_shares_the_index_and_its_writes_stay_its_own():
    original = MemoryFS({"archive/a.txt": "record AB-1234 | weight 5\nnote: AB-1234 again\n",
                         "archive/b.txt": "record CD-5678 | successor AB-1234\n"}, indexed=True)
    run = copy.deepcopy(original)
    assert run._index is original._index and run.files == original.files
    assert run.search("AB-1234") == [("archive/a.txt", 1), ("archive/a.txt", 2), ("archive/b.txt", 1)]
    run.write("archive/a.txt", "nothing here\n")
    run.write("notes/found.md", "AB-1234 is the start\n")
    assert run.search("AB-1234") == [("archive/b.txt", 1), ("notes/found.md", 1)]
    assert run.search("AB-1234", limit=1) == [("archive/b.txt", 1)]
    assert original.search("AB-1234") == [("archive/a.txt", 1), ("archive/a.txt", 2), ("archive/b.txt", 1)]
    assert original.search("weight 5") == [("archive/a.txt", 1)]  # with whitespace: scanned line by line
