"""Constants shared by the sandbox tests (a uniquely named module: `conftest` is ambiguous across test dirs)."""

# Hidden expectations must not be guessable: the answers depend on a large prime the candidate is never shown.
MIX_REFERENCE = "def mix(a, b):\n    return (a * 7919 + b) % 104729\n"
MIX_CHECK = """
def check(candidate):
    assert candidate(3, 4) == (3 * 7919 + 4) % 104729
    assert candidate(1234, 99) == (1234 * 7919 + 99) % 104729
    assert candidate(-5, 17) == (-5 * 7919 + 17) % 104729
"""
