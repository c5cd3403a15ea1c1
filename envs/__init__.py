"""Task cards shipped with dialogue_gym (data only)."""
