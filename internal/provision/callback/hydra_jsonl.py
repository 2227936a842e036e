# hydra_jsonl: an Ansible stdout callback that prints one JSON object per line for every event hydra
# follows (play_start, task_start, host_task_start, ok, changed results, failed, unreachable, skipped,
# retry, stats). Every event about one host carries its inventory name as "host"; task_start is the
# play's (once per task, whichever hosts run it), host_task_start the task queued for one host.
# Embedded in the hydra provider and written next to each run; it needs nothing beyond ansible-core.
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = '''
    name: hydra_jsonl
    type: stdout
    short_description: JSON lines for the hydra Terraform provider
    description:
      - Prints one JSON object per event on stdout, flushed at once.
'''

import json
import sys
import time

from ansible.plugins.callback import CallbackBase

try:
    from ansible.parsing.ajson import AnsibleJSONEncoder
except ImportError:  # pragma: no cover
    AnsibleJSONEncoder = None

LIMIT = 2000
KEYS = ('msg', 'rc', 'stderr', 'stdout', 'reason', 'exception', 'module_stderr', 'module_stdout',
        'assertion', 'evaluated_to', 'attempts', 'status', 'url', 'censored')


def _cut(value):
    if isinstance(value, str) and len(value) > LIMIT:
        return value[:LIMIT // 2] + ' ...[cut]... ' + value[-LIMIT // 2:]
    return value


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'hydra_jsonl'

    def _emit(self, event, **fields):
        fields['event'] = event
        fields['ts'] = round(time.time(), 3)
        try:
            line = json.dumps(fields, cls=AnsibleJSONEncoder, sort_keys=True) if AnsibleJSONEncoder \
                else json.dumps(fields, default=str, sort_keys=True)
        except Exception:
            line = json.dumps(fields, default=str, sort_keys=True)
        sys.stdout.write(line + '\n')
        sys.stdout.flush()

    @staticmethod
    def _task_fields(task):
        out = {'task': task.get_name().strip(), 'action': task.action}
        role = getattr(task, '_role', None)
        if role is not None:
            out['role'] = role.get_name()
        return out

    def _summary(self, result, failed):
        r = result._result
        if not isinstance(r, dict):
            return {}
        out = {'changed': bool(r.get('changed', False))}
        if not failed:
            if 'msg' in r and result._task.action in ('debug', 'ansible.builtin.debug', 'assert',
                                                       'ansible.builtin.assert', 'fail', 'ansible.builtin.fail'):
                out['msg'] = _cut(r['msg'])
            return out
        for k in KEYS:
            if k in r and r[k] not in (None, '', []):
                out[k] = _cut(r[k])
        items = r.get('results')
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict) and (item.get('failed') or item.get('unreachable')):
                    # The failed item's own words: its message, and what its command printed.
                    out['item_msg'] = _cut(item.get('msg') or item.get('stderr') or '')
                    for k in ('stderr', 'module_stderr', 'rc'):
                        if item.get(k) not in (None, '', []):
                            out['item_' + k] = _cut(item[k])
                    label = item.get('_ansible_item_label', item.get('item'))
                    if label is not None:
                        out['item'] = _cut(str(label))
                    break
        return out

    def v2_playbook_on_start(self, playbook):
        self._emit('playbook_start', playbook=getattr(playbook, '_file_name', ''))

    def v2_playbook_on_play_start(self, play):
        self._emit('play_start', play=play.get_name().strip())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._started(task, False)

    def v2_playbook_on_handler_task_start(self, task):
        self._started(task, True)

    def _started(self, task, handler):
        fields = self._task_fields(task)
        if handler:
            fields['handler'] = True
        # The strategy templates the task's name only for this call: remembered for the task's
        # host_task_start events, which come next.
        self._current = (getattr(task, '_uuid', None), fields)
        self._emit('task_start', **fields)

    def v2_runner_on_start(self, host, task):
        # The task queued for one host: a batch's hosts hear only of the tasks they run (a task of a
        # file one host included is no other host's task).
        current = getattr(self, '_current', None)
        if current is not None and current[0] == getattr(task, '_uuid', None):
            fields = dict(current[1])
        else:
            fields = self._task_fields(task)
        self._emit('host_task_start', host=host.get_name(), **fields)

    def v2_playbook_on_no_hosts_matched(self):
        self._emit('no_hosts')

    def v2_runner_on_ok(self, result):
        self._emit('ok', host=result._host.get_name(), result=self._summary(result, False),
                   **self._task_fields(result._task))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._emit('failed', host=result._host.get_name(), ignore_errors=bool(ignore_errors),
                   result=self._summary(result, True), **self._task_fields(result._task))

    def v2_runner_on_unreachable(self, result):
        self._emit('unreachable', host=result._host.get_name(), result=self._summary(result, True),
                   **self._task_fields(result._task))

    def v2_runner_on_skipped(self, result):
        self._emit('skipped', host=result._host.get_name(), **self._task_fields(result._task))

    def v2_runner_retry(self, result):
        r = result._result if isinstance(result._result, dict) else {}
        self._emit('retry', host=result._host.get_name(), attempt=r.get('attempts'),
                   retries=r.get('retries'), **self._task_fields(result._task))

    def v2_playbook_on_stats(self, stats):
        hosts = {}
        for h in sorted(stats.processed.keys()):
            hosts[h] = stats.summarize(h)
        self._emit('stats', stats=hosts)
