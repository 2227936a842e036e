# hydra's strategy for a provisioning batch: Ansible's free strategy (every host at its own pace), except
# that the controller itself does, without forking a worker, what a worker would only evaluate there:
# a task whose condition is false for a host, and a task that runs nothing on the host (set_fact,
# assert, fail, debug, include_vars, include_tasks).
#
# Ansible forks a worker for every task and host, and a worker's first step is to evaluate the task's
# `when`; for a skipped task that is all it does. hydra's playbooks gate whole blocks by one include
# (a driver already installed, a package already there, a firewall not needed), so a first run of
# bare-vm.yml skips about a third of the tasks it schedules on a machine, and each skip cost the runner
# a fork and a worker's start-up (about 20 ms of CPU) for nothing. Here the controller evaluates the
# condition the way the worker would (the same variables, the play context's overrides and connection
# variables added) and, when it is false, hands the strategy the very result the worker would have
# sent: the callbacks, `register`, the host's statistics and the include handling see no difference.
#
# Only a task the worker would have decided the same way is skipped here: no loop (its condition is
# per item), no delegation (its variables are another host's), a `when` to evaluate, and no error while
# evaluating it (an undefined variable, a broken template): anything else goes to a worker as before,
# which reports it as it always did.
#
# A task of one of those actions that runs (no loop, no retries, no delegation, no async) is run by the
# controller with Ansible's own TaskExecutor, exactly as the worker runs it, on a copy of the task (the
# executor templates and squashes its task, which the worker does on the copy fork gave it), and its
# result goes where the worker's would. These actions only template and compare variables on the
# controller, a few milliseconds each: the fork and the worker's start-up cost several times that.
#
# Ansible also adds meta tasks: role_complete after every role, flush_handlers around the sections of
# a play (bare-vm.yml: 22 a machine, next to its 25 real tasks). The free strategy gathers the host's
# variables for each before it looks at the action (1 to 3 ms of the controller's CPU each in a batch
# of 20 machines: the magic variables list every host). A meta task with no condition (none, or the
# literal true role_complete carries) and no template in its name uses none of them, so the strategy
# gets an empty dict for it.
#
# A mapping that set_fact makes of data already marked unsafe (hydra_machine: the probe's JSON, about
# 150 values) can only template to itself, yet Ansible walks it value by value at every reference of it,
# and hydra's variables refer to hydra_machine a few hundred times a machine: in a 20-machine batch
# that was 96% of all the templar's calls (some 500,000, in the controller and its workers). Such a
# fact is kept as a mapping marked unsafe as a whole, which the templar hands over as it is; it reads,
# filters, compares and dumps as the plain mapping it holds (TestHydraFree).
#
# It relies on Ansible's internals as ansible-core 2.14 has them (TaskExecutor's arguments, the free
# strategy's result queue), and runs only on the minors TestAnsibleCoreMatrix proves it on (_PROVEN);
# on any other ansible-core it is plain `free`. Whatever goes wrong inside it (an exception of its own
# or of those internals) hands the task to a worker, as plain `free` would have
# (TestHydraFree injects one).
from __future__ import annotations

DOCUMENTATION = '''
    name: hydra_free
    short_description: Ansible's free strategy; skipped tasks and tasks that run nothing on the host cost no worker
    description:
        - Runs as the free strategy. A task whose C(when) is false for a host (no loop, no delegation)
          is reported skipped by the controller instead of a worker process forked for it, and a task of
          set_fact, assert, fail, debug, include_vars or include_tasks is run by the controller itself.
          A mapping set_fact makes of values all marked unsafe is kept marked unsafe as a whole.
    author: hydra
'''

import traceback

from ansible.plugins.strategy.free import StrategyModule as FreeStrategyModule

# The ansible-core minors this strategy is proven on; on any other it is plain free.
_PROVEN = ((2, 14),)

try:
    from ansible.release import __version__ as _version
    if tuple(int(x) for x in _version.split('.')[:2]) not in _PROVEN:
        raise ImportError('ansible-core %s: hydra_free runs as plain free' % _version)
    from ansible.errors import AnsibleConnectionFailure
    from ansible import constants as C
    from ansible.executor.task_executor import TaskExecutor
    from ansible.executor.task_result import TaskResult
    from ansible.plugins import loader as plugin_loader
    from ansible.template import Templar
    from ansible.utils.unsafe_proxy import AnsibleUnsafe
    _READY = True
except Exception:  # another Ansible: plain free strategy
    _READY = False

# The actions that run nothing on the host: they template, compare and set variables on the controller.
_LOCAL_ACTIONS = frozenset(prefix + name for prefix in ('', 'ansible.builtin.', 'ansible.legacy.')
                           for name in ('set_fact', 'assert', 'fail', 'debug', 'include_vars', 'include_tasks'))


_RESOLVE = _READY
if _READY:
    class _Resolved(dict, AnsibleUnsafe):
        """A fact that set_fact made a mapping whose every string is marked unsafe: templating it can only
        give it back, so it is marked unsafe as a whole and the templar returns it as it is instead of
        walking it at every reference. Pickled and dumped as the plain dict it holds."""

        def __reduce__(self):
            return dict, (dict(self),)

    try:
        import yaml
        from ansible.parsing.yaml.dumper import AnsibleDumper
        AnsibleDumper.add_representer(_Resolved, yaml.representer.SafeRepresenter.represent_dict)
    except Exception:  # pragma: no cover - to_yaml of such a fact would fail: the facts stay as they are
        _RESOLVE = False


def _display_fallback(task):
    """Says, at -vvv, that a task went to a worker because this strategy could not run it."""
    try:
        from ansible.utils.display import Display
        Display().vvv('hydra_free: %s goes to a worker: %s' % (task, traceback.format_exc().strip().splitlines()[-1]))
    except Exception:
        pass


def _inert(value):
    """Whether templating value can only give it back: every string in it is marked unsafe, and it
    holds nothing but mappings, lists, strings and plain scalars."""
    if isinstance(value, AnsibleUnsafe):
        return True
    if isinstance(value, dict):
        return all(_inert(v) for v in value.values())
    if isinstance(value, list):
        return all(_inert(v) for v in value)
    return value is None or isinstance(value, (bool, int, float))


def _resolve_facts(result):
    """set_fact's mappings that templating can only give back, as _Resolved (see above)."""
    facts = result.get('ansible_facts') if isinstance(result, dict) else None
    if not isinstance(facts, dict) or result.get('_ansible_facts_cacheable'):
        return
    for name, value in list(facts.items()):
        if type(value) is dict and _inert(value):
            facts[name] = _Resolved(value)


class _MetaTasksNeedNoVars(object):
    """The play's VariableManager, except that get_vars for a meta task without a condition (none, or
    the literal true Ansible gives the role_complete task after every role) and without a template in
    its name returns an empty dict instead of gathering the host's variables."""

    def __init__(self, variable_manager):
        self._variable_manager = variable_manager

    def __getattr__(self, name):
        return getattr(self._variable_manager, name)

    def get_vars(self, *args, **kwargs):
        task = kwargs.get('task')
        try:
            unused = (task is not None and task.action in C._ACTION_META and
                      all(c is None or c is True or c == '' for c in task.when or ()) and
                      not any('{' in field for field in (task.name, task.throttle, task.run_once)
                              if isinstance(field, str)))
        except Exception:
            unused = False
        if unused:
            return {}
        return self._variable_manager.get_vars(*args, **kwargs)


class StrategyModule(FreeStrategyModule):

    def run(self, iterator, play_context):
        if _READY and hasattr(self, '_variable_manager') and not isinstance(self._variable_manager, _MetaTasksNeedNoVars):
            self._variable_manager = _MetaTasksNeedNoVars(self._variable_manager)
        return super(StrategyModule, self).run(iterator, play_context)

    def _queue_task(self, host, task, task_vars, play_context):
        # A task that runs nothing on the host is run here whatever its condition (the executor
        # evaluates it once, as a worker would); another is skipped here when its condition is false.
        # Each returns False, having reported nothing, when it cannot: the task then goes to a worker.
        if _READY and self._internals_known() and (self._ran_here(host, task, task_vars, play_context) or
                                                   self._skipped_here(host, task, task_vars, play_context)):
            return
        super(StrategyModule, self)._queue_task(host, task, task_vars, play_context)

    def _internals_known(self):
        """Whether this strategy has the free strategy's internals _handled_here relies on."""
        return all(hasattr(self, name) for name in (
            '_queued_task_cache', '_results', '_results_lock', '_pending_results', '_tqm', 'normalize_task_result'))

    def _handled_here(self, host, task, task_vars, play_context, result, fields):
        """Does what _queue_task, the worker (WorkerProcess._run) and the results thread do for a task and
        host, with result and fields (the task's) in place of the worker's; False, having done nothing,
        when the result cannot be made."""
        key = (host.name, task._uuid)
        try:
            self._queued_task_cache[key] = {'host': host, 'task': task, 'task_vars': task_vars, 'play_context': play_context}
            task_result = self.normalize_task_result(TaskResult(host.name, task._uuid, result, task_fields=fields))
        except Exception:
            _display_fallback(task)
            try:
                self._queued_task_cache.pop(key, None)
            except Exception:
                pass
            return False
        self._tqm.send_callback('v2_runner_on_start', host, task)
        self._pending_results += 1
        with self._results_lock:
            self._results.append(task_result)
        return True

    def _ran_here(self, host, task, task_vars, play_context):
        try:
            if (task.action not in _LOCAL_ACTIONS or task.loop is not None or task.loop_with or task.delegate_to
                    or task.until or task.async_val or task.debugger):
                return False
            # The executor templates and squashes its task: a copy, as the worker's is.
            local = task.copy(exclude_tasks=True)
            executor = TaskExecutor(host, local, task_vars.copy(), play_context, None, self._loader, plugin_loader,
                                    self._final_q)
            try:
                result = executor.run()
            except AnsibleConnectionFailure:
                result = dict(unreachable=True)
            # The executor reports the task's own errors as its result; one it raises is the machinery's.
            if _RESOLVE and task.action in C._ACTION_SET_FACT:
                _resolve_facts(result)
            fields = local.dump_attrs()
        except Exception:
            _display_fallback(task)
            return False
        return self._handled_here(host, task, task_vars, play_context, result, fields)

    def _skipped_here(self, host, task, task_vars, play_context):
        try:
            if not task.when or task.loop is not None or task.loop_with or task.delegate_to:
                return False
            # What TaskExecutor._execute does before it evaluates the condition.
            templar = Templar(loader=self._loader, variables=task_vars)
            variables = task_vars.copy()
            context = play_context.set_task_and_variable_override(task=task, variables=task_vars, templar=templar)
            context.post_validate(templar=templar)
            if not context.remote_addr:
                context.remote_addr = host.address
            context.update_vars(variables)
            if task.evaluate_conditional(templar, variables):
                return False
            result = dict(changed=False, skipped=True, skip_reason='Conditional result was False',
                          _ansible_no_log=context.no_log)
            fields = task.dump_attrs()
        except Exception:
            return False
        return self._handled_here(host, task, task_vars, play_context, result, fields)
