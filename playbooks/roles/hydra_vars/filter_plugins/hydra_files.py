# hydra_file_state: the state the preflight's probe reports of a file hydra writes whole
# (hydra_machine.files, roles/preflight/files/detect.py): "<mode> <content's SHA-256>". A role leaves a
# file alone where the probe saw the state it would write:
#   when: hydra_machine.files[path] | default('') != content | hydra_file_state('0644')
# The content is hashed as Ansible's hash filter hashes it (UTF-8, surrogates refused).
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib

from ansible.module_utils.common.text.converters import to_bytes


def hydra_file_state(content, mode):
    return "%s %s" % (mode, hashlib.sha256(to_bytes(content, errors='surrogate_or_strict')).hexdigest())


class FilterModule(object):
    def filters(self):
        return {'hydra_file_state': hydra_file_state}
