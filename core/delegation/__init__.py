"""Delegation: an agent hands work to subordinates, and their answers come back to it.

The contract (docs/architecture.md, "Delegation") lives here whole:

- `steps`: the checks every delegation makes (which profiles an agent may call,
  the depth and runaway guards) and the steps of making a subordinate (its name,
  configuration, budgets and task);
- `call_one`, `call_many`, `handoff`: the three delegation tools as typed
  classes (`call_subordinate`, `call_subordinates`, `handoff`); tools/ offers
  them to agents under those names;
- `handover`: a subordinate's answer (or failure) handed up to its superior,
  live and after a restart alike; `parallel`: siblings working at once;
- `workflow`: a workflow profile's stages run as those tools' calls (the
  declaration itself is read by profiles/workflow.py);
- `resume`: a chat restored mid-delegation finishes what its agents owed;
- `links`: the typed links between an agent and its subordinates.
"""
