import platform

import pytest

from agentsum.runtime import tune_allocator


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_allocator_tuning_applies_on_glibc_and_can_be_switched_off(monkeypatch):
    assert tune_allocator() is True
    assert tune_allocator() is True  # idempotent
    monkeypatch.setenv("AGENTSUM_MALLOC_TUNING", "0")
    assert tune_allocator() is False
