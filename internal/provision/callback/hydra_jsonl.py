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
import os
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


def _diff_paths(r):
    """What a result's diffs (--diff) say changed, by the file's path, never its content (a file may hold
    secrets); the items' diffs of a loop too. At most 20."""
    out = []
    for x in [r] + [i for i in (r.get('results') or []) if isinstance(i, dict)]:
        d = x.get('diff')
        for d in d if isinstance(d, list) else ([d] if isinstance(d, dict) else []):
            if not isinstance(d, dict) or d.get('before') == d.get('after'):
                continue
            # The file's path: the result's, else the diff's header (copy's diff of a file it would
            # create names only the controller's temporary copy: "new file").
            h = x.get('dest') or x.get('path') or d.get('before_header') or d.get('after_header')
            if isinstance(h, str) and '/ansible-local-' in h:
                h = 'new file'
            if isinstance(h, str) and h not in out:
                out.append(h)
    return out[:20]


def _cut(value):
    if isinstance(value, str) and len(value) > LIMIT:
        return value[:LIMIT // 2] + ' ...[cut]... ' + value[-LIMIT // 2:]
    return value


# The plugins every task of hydra's playbooks needs. Ansible forks a worker per task and host, and a
# worker loads what its process has not: without this, every worker that evaluates a template with a
# filter or a test reads and compiles every filter and test plugin file anew (ansible.builtin's filter
# plugins import the crypt module, which tries each hashing method at import), about 15 ms of CPU per
# task and host. Loaded once here, in the controller before its first fork, every worker inherits them.
PRELOAD = (
    ('action_loader', ('raw', 'assert', 'fail', 'set_fact', 'include_vars', 'normal')),
    ('connection_loader', ('ssh',)),
    ('shell_loader', ('sh',)),
    ('become_loader', ('sudo',)),
    ('lookup_loader', ('file',)),
)


def _preload_plugins():
    try:
        from ansible.plugins import loader
        # Jinja2 plugins: loading one name loads them all (the playbook and its roles are parsed by
        # now, so the roles' own plugin directories are on the path).
        for jinja in (loader.filter_loader, loader.test_loader):
            for _ in jinja.all():
                pass
        for name, plugins in PRELOAD:
            for plugin in plugins:
                getattr(loader, name).get(plugin, class_only=True)
        # hydra's runs enable no vars plugin (ansible.cfg: vars_plugins_enabled is empty), yet Ansible
        # lists the vars plugin directories on disk for every task and host to find none: a third of
        # the controller's own CPU for 20 machines. Nothing to list, nothing is listed.
        from ansible import constants as C
        if not any(C.VARIABLE_PLUGINS_ENABLED):
            loader.vars_loader.all = lambda *args, **kwargs: iter(())
        # Jinja2's own filters and tests (default, int, join, select, ...) are not Ansible plugins: every
        # template environment (one per template, about 300 per machine) asks the plugin loader for
        # them again and the loader searches the collections each time before Jinja2's are used. The
        # answers, found or not, are kept for the run and found once here.
        import jinja2.filters
        import jinja2.tests
        for jinja, builtin in ((loader.filter_loader, jinja2.filters.FILTERS), (loader.test_loader, jinja2.tests.TESTS)):
            _remember_lookups(jinja)
            for name in builtin:
                try:
                    jinja.get(name)
                except Exception:
                    pass
    except Exception:  # pragma: no cover - a speed-up only: the workers load what they need
        pass


def _remember_lookups(jinja):
    """Makes jinja.get (a filter or test name, nothing else) answer each name once per process."""
    get = jinja.get
    answers = {}

    def remembered(name, *args, **kwargs):
        if args or kwargs:
            return get(name, *args, **kwargs)
        if name not in answers:
            try:
                answers[name] = (get(name), None)
            except Exception as e:
                answers[name] = (None, e)
        plugin, err = answers[name]
        if err is not None:
            raise err.with_traceback(None)
        return plugin

    jinja.get = remembered


class _compile_lock(object):
    """An exclusive lock on one template's compilation, shared by the run's processes (flock on a file
    next to its bytecode); nothing when there is no key or the file cannot be made."""

    def __init__(self, directory, key):
        self.fd = None
        if key is None:
            return
        try:
            import fcntl
            self.fd = os.open(os.path.join(directory, key + '.lock'), os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except Exception:
            if self.fd is not None:
                os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
        return False


def _cache_templates(directory):
    """Compiles each Jinja2 template source once per run instead of once per worker.

    Ansible compiles every template it evaluates (the play's become, a role's variables, a task's
    arguments) in the worker forked for that task and host, and throws the result away with the
    worker: one machine's run compiled about 400 templates, most of them the same few dozen, at
    about 5 ms each. Installed here, in the controller before its first fork, every worker looks a
    source up first in its own memory, then in Jinja2's own bytecode cache in the run's directory
    (written atomically, checked against the source's checksum and the Python version), and compiles
    only what no earlier worker of the run has. The environment's settings are part of the key.
    """
    try:
        import hashlib
        import os
        import jinja2
        from jinja2.bccache import FileSystemBytecodeCache
        os.makedirs(directory, exist_ok=True)
        cache = FileSystemBytecodeCache(directory)
    except Exception:  # pragma: no cover - a speed-up only
        return
    compile_ = jinja2.Environment.compile
    seen = {}

    def settings(env):
        return repr((type(env).__module__, type(env).__qualname__, jinja2.__version__, env.block_start_string,
                     env.block_end_string, env.variable_start_string, env.variable_end_string,
                     env.comment_start_string, env.comment_end_string, env.line_statement_prefix,
                     env.line_comment_prefix, env.trim_blocks, env.lstrip_blocks, env.newline_sequence,
                     env.keep_trailing_newline, env.optimized, env.is_async, repr(env.autoescape),
                     getattr(env.finalize, '__qualname__', repr(env.finalize)), sorted(env.extensions)))

    def cached(env, key, source):
        """The template's bucket in the bytecode cache (None when the cache cannot be read) and the code
        compiled earlier for it (None when there is none)."""
        try:
            bucket = cache.get_bucket(env, key, None, source)
        except Exception:
            return None, None
        return bucket, bucket.code

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        if raw or defer_init or name is not None or filename is not None or not isinstance(source, str):
            return compile_(self, source, name, filename, raw, defer_init)
        key = hashlib.sha256((settings(self) + '\0' + source).encode('utf-8', 'surrogatepass')).hexdigest()
        code = seen.get(key)
        if code is not None:
            return code
        bucket, code = cached(self, key, source)
        if code is None:
            # The hosts of a batch reach a task together, so its workers all miss the same templates at
            # once: the first to take the template's lock compiles it, the others wait and read its
            # bytecode instead of compiling it again (a batch of 20 compiled some 230 templates in
            # its workers, most of them many times over).
            with _compile_lock(directory, bucket.key if bucket is not None else None):
                if bucket is not None:
                    bucket, code = cached(self, key, source)
                if code is None:
                    code = compile_(self, source)
                    if bucket is not None:
                        bucket.code = code
                        try:
                            cache.set_bucket(bucket)
                        except Exception:
                            pass
        seen[key] = code
        return code

    jinja2.Environment.compile = compile


if os.environ.get('HYDRA_TEMPLATE_CACHE'):
    _cache_templates(os.environ['HYDRA_TEMPLATE_CACHE'])


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
            paths = _diff_paths(r)
            if paths:
                out['diff'] = paths
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
        if not getattr(self, '_preloaded', False):
            self._preloaded = True
            _preload_plugins()

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
