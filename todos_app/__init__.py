"""Agent-owned todo lists (docs/runtime.md §7): storage, editing and audit."""
