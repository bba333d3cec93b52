"""The scheduler: tasks that run Agent 0 on a prompt on a cron schedule, at planned times or
on demand, while Cadre runs (tasks.py: what a task is; timing.py: when it is due;
store.py: usr/scheduler/tasks.json; service.py: the runs)."""
