"""The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timers.

This follows Kafka's GroupMetadataManager for classic groups step by step: a rebalance moves a group
from Stable or Empty to PreparingRebalance, completes the join phase when every member has rejoined
(or the rebalance timeout removes those that did not), hands the leader the member list, waits in
CompletingRebalance for the leader's assignment, stores it in ``__consumer_offsets`` and becomes
Stable. Members are removed when their session expires without a heartbeat. Everything runs on the
coordinator's thread (the event loop); delayed work goes through the injected ``Timer``.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from minibroker.groups.config import GroupConfig
from minibroker.groups.group import ClassicGroup, GroupState, Member
from minibroker.groups.requests import JoinRequest, LeavingMember, Responder
from minibroker.groups.timer import Timer
from minibroker.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

UNKNOWN_MEMBER_ID = ""

# Persists a group (with the given assignment) to __consumer_offsets; returns the error to answer with.
PersistGroup = Callable[[ClassicGroup, dict[str, bytes]], ErrorCode]

Empty, Preparing, Completing, Stable, Dead = (
    GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD,
)


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"


def join_error(member_id: str, error: ErrorCode) -> dict[str, Any]:
    return {"error_code": error, "member_id": member_id, "generation_id": -1, "protocol_name": None, "leader": "", "members": []}


def sync_error(error: ErrorCode) -> dict[str, Any]:
    return {"error_code": error, "assignment": b"", "protocol_name": None, "protocol_type": None}


class Rebalancer:
    def __init__(
        self, groups: dict[str, ClassicGroup], timer: Timer, config: GroupConfig, persist_group: PersistGroup
    ) -> None:
        self.groups = groups
        self.timer = timer
        self.config = config
        self.persist_group = persist_group

    # ---- JoinGroup ----

    def join(self, request: JoinRequest, respond: Responder) -> None:
        """Handle a JoinGroup; ``respond`` is called once, now or when the join phase completes."""
        group = self.groups.get(request.group_id)
        unknown = request.member_id == UNKNOWN_MEMBER_ID
        if group is None:
            if not unknown:
                respond(join_error(request.member_id, ErrorCode.UNKNOWN_MEMBER_ID))
                return
            group = self._create_group(request.group_id, respond)
            if group is None:
                return
        if not self._accepts_joining_member(group, request.member_id):
            group.remove(request.member_id)
            respond(join_error(UNKNOWN_MEMBER_ID, ErrorCode.GROUP_MAX_SIZE_REACHED))
        elif unknown:
            self._join_new_member(group, request, respond)
        else:
            self._join_existing_member(group, request, respond)

    def _create_group(self, group_id: str, respond: Responder) -> ClassicGroup | None:
        """A group starts as an empty GroupMetadata record (as Kafka writes it); None if that write failed."""
        group = ClassicGroup(group_id, created_ms=self.timer.now_ms())
        group.current_state_timestamp = group.created_ms
        error = self.persist_group(group, {})
        if error != ErrorCode.NONE:
            respond(join_error(UNKNOWN_MEMBER_ID, error))
            return None
        self.groups[group_id] = group
        return group

    def _accepts_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.max_size
        if group.is_in(Empty, Dead):
            return True
        if group.is_in(Preparing):
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join is not None) or group.num_awaiting_join < max_size
        return group.has_member(member_id) or len(group.members) < max_size

    def _join_new_member(self, group: ClassicGroup, request: JoinRequest, respond: Responder) -> None:
        if group.is_in(Dead):
            respond(join_error(UNKNOWN_MEMBER_ID, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(request.protocol_type, request.protocols):
            respond(join_error(UNKNOWN_MEMBER_ID, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_member_id = ClassicGroup.new_member_id(request.client_id, request.group_instance_id)
        if request.group_instance_id is not None:
            existing = group.static_members.get(request.group_instance_id)
            if existing is not None:
                log.info("static member %s of group %s rejoins with an unknown member id in state %s; replacing member %s",
                         request.group_instance_id, group.group_id, group.state.value, existing)
                self._update_static_member(group, request, existing, new_member_id, respond)
                return
            self._add_member(group, request, new_member_id, respond)
        elif request.require_known_member_id:
            log.info("new member of group %s in state %s gets member id %s and must rejoin with it",
                     group.group_id, group.state.value, new_member_id)
            group.add_pending_member(new_member_id)
            self.timer.schedule(
                heartbeat_key(group.group_id, new_member_id), request.session_timeout_ms,
                lambda: self.expire_heartbeat(group.group_id, new_member_id),
            )
            respond(join_error(new_member_id, ErrorCode.MEMBER_ID_REQUIRED))
        else:
            self._add_member(group, request, new_member_id, respond)

    def _join_existing_member(self, group: ClassicGroup, request: JoinRequest, respond: Responder) -> None:
        member_id = request.member_id
        if group.is_in(Dead):
            respond(join_error(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(request.protocol_type, request.protocols):
            respond(join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        if group.is_pending_member(member_id):
            if request.group_instance_id is not None:
                respond(join_error(member_id, ErrorCode.UNKNOWN_SERVER_ERROR))
                return
            log.info("pending member %s joins group %s in state %s", member_id, group.group_id, group.state.value)
            self._add_member(group, request, member_id, respond)
            return
        error = group.validate_member(member_id, request.group_instance_id)
        if error != ErrorCode.NONE:
            respond(join_error(member_id, error))
            return
        member = group.members[member_id]
        if group.is_in(Preparing):
            self._update_member(group, member, request, respond, f"member {member_id} joins during a rebalance")
        elif group.is_in(Completing):
            if member.protocols == request.protocols:
                members = group.member_list() if group.is_leader(member_id) else []
                respond(self._join_response(group, member_id, members))
            else:
                self._update_member(group, member, request, respond, f"member {member_id} changed its metadata")
        elif group.is_in(Stable):
            if group.is_leader(member_id):
                self._update_member(group, member, request, respond, f"leader {member_id} rejoins")
            elif member.protocols != request.protocols:
                self._update_member(group, member, request, respond, f"member {member_id} changed its metadata")
            else:
                respond(self._join_response(group, member_id, []))
        else:
            log.warning("member %s rejoins group %s in unexpected state %s", member_id, group.group_id, group.state.value)
            respond(join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))

    @staticmethod
    def _join_response(
        group: ClassicGroup, member_id: str, members: list[dict[str, Any]], leader: str | None = None, skip: bool = False
    ) -> dict[str, Any]:
        return {
            "error_code": ErrorCode.NONE,
            "generation_id": group.generation_id,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader": (group.leader_id if leader is None else leader) or "",
            "skip_assignment": skip,
            "member_id": member_id,
            "members": members,
        }

    def _add_member(self, group: ClassicGroup, request: JoinRequest, member_id: str, respond: Responder) -> None:
        member = Member(
            member_id, request.group_instance_id, request.client_id, request.client_host,
            request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type, request.protocols,
            is_new=True,
        )
        if group.is_in(Preparing) and group.previous_state == Empty:
            group.new_member_added = True
        group.add(member, respond)
        # A new member cannot heartbeat before it knows its id, so its join is bounded by a fixed timeout instead.
        self._reschedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._prepare_rebalance_or_complete_join(
            group, f"adding member {member_id} with group instance id {request.group_instance_id}; reason: {request.reason}"
        )

    def _update_member(self, group: ClassicGroup, member: Member, request: JoinRequest, respond: Responder, reason: str) -> None:
        group.update_member(member, request.protocols, request.rebalance_timeout_ms, request.session_timeout_ms, respond)
        self._prepare_rebalance_or_complete_join(group, f"{reason}; reason: {request.reason}")

    def _update_static_member(
        self, group: ClassicGroup, request: JoinRequest, old_member_id: str, new_member_id: str, respond: Responder
    ) -> None:
        current_leader = group.leader_id
        member = group.replace_static_member(request.group_instance_id, old_member_id, new_member_id)
        self._reschedule_heartbeat(group, member)
        old = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, request.protocols, request.rebalance_timeout_ms, request.session_timeout_ms, respond)
        if group.is_in(Stable):
            if group.protocol_name == group.select_protocol():
                log.info("static member %s rejoins stable group %s without changing its protocol: no rebalance",
                         request.group_instance_id, group.group_id)
                error = self.persist_group(group, group.assignments())
                if error != ErrorCode.NONE:
                    log.warning("could not store static member %s of group %s (%s); reverting to member id %s",
                                request.group_instance_id, group.group_id, error.name, old_member_id)
                    group.update_member(member, *old, None)
                    restored = group.replace_static_member(request.group_instance_id, new_member_id, old_member_id)
                    self._reschedule_heartbeat(group, restored)
                    respond({**self._join_response(group, UNKNOWN_MEMBER_ID, [], current_leader), "error_code": error})
                elif request.supports_skip_assignment:
                    leader = group.is_leader(new_member_id)
                    members = group.member_list() if leader else []
                    group.complete_join(member, self._join_response(group, new_member_id, members, skip=leader))
                else:
                    group.complete_join(member, self._join_response(group, new_member_id, [], current_leader))
            else:
                self._prepare_rebalance_or_complete_join(
                    group, f"static member {request.group_instance_id} rejoins with another protocol"
                )
        elif group.is_in(Completing):
            self._prepare_rebalance(group, f"static member {request.group_instance_id} rejoins while awaiting assignment")
        else:
            self._maybe_complete_join_phase(group)

    # ---- the join phase ----

    def rebalance(self, group: ClassicGroup, reason: str) -> None:
        """Start a rebalance of a group made outside the join protocol (a consumer-protocol group turned classic)."""
        self._prepare_rebalance_or_complete_join(group, reason)

    def _prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join_phase(group)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(Completing):
            self._reset_and_propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        initial = group.is_in(Empty)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            self.timer.schedule(
                join_key(group.group_id), delay, lambda: self._try_complete_initial_rebalance(group.group_id, delay, remaining)
            )
        group.transition_to(Preparing, self.timer.now_ms())
        log.info("preparing to rebalance group %s with old generation %d (%s)", group.group_id, group.generation_id, reason)
        if not initial:
            self._complete_join_or_schedule(group)

    def _complete_join_or_schedule(self, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self._complete_join(group)
        else:
            self.timer.schedule(
                join_key(group.group_id), group.rebalance_timeout_ms, lambda: self._complete_join_by_id(group.group_id)
            )

    def _try_complete_initial_rebalance(self, group_id: str, delay: int, remaining: int) -> None:
        """The initial rebalance waits ``group.initial.rebalance.delay.ms`` more each time a member joins."""
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.timer.schedule(
                join_key(group_id), new_delay, lambda: self._try_complete_initial_rebalance(group_id, new_delay, new_remaining)
            )
        else:
            self._complete_join(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if group.is_in(Preparing) and group.previous_state != Empty and group.has_all_members_joined():
            self._complete_join(group)

    def _complete_join_by_id(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        """End the join phase: drop dynamic members that did not rejoin, start the next generation, answer the joins."""
        self.timer.cancel(join_key(group.group_id))
        gone = group.not_yet_rejoined_dynamic_members()
        for member in gone:
            group.remove(member.member_id)
            self.timer.cancel(heartbeat_key(group.group_id, member.member_id))
        if gone:
            log.info("group %s removed members who did not rejoin: %s", group.group_id, [m.member_id for m in gone])
        if group.is_in(Dead):
            log.info("group %s is dead, skipping the rebalance", group.group_id)
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.error("group %s could not complete its rebalance because no member rejoined", group.group_id)
            self.timer.schedule(
                join_key(group.group_id), group.rebalance_timeout_ms, lambda: self._complete_join_by_id(group.group_id)
            )
            return
        group.init_next_generation(self.timer.now_ms())
        if group.is_in(Empty):
            log.info("group %s with generation %d is now empty", group.group_id, group.generation_id)
            error = self.persist_group(group, {})
            if error != ErrorCode.NONE:
                log.warning("could not store empty group %s: %s", group.group_id, error.name)
            return
        log.info("stabilized group %s generation %d with %d members (protocol %s)",
                 group.group_id, group.generation_id, len(group.members), group.protocol_name)
        for member in list(group.members.values()):
            members = group.member_list() if group.is_leader(member.member_id) else []
            group.complete_join(member, self._join_response(group, member.member_id, members))
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self.timer.schedule(
            sync_key(group.group_id), group.rebalance_timeout_ms,
            lambda generation=group.generation_id: self._expire_pending_sync(group.group_id, generation),
        )

    def _expire_pending_sync(self, group_id: str, generation_id: int) -> None:
        """Members that never sent SyncGroup after the join phase are removed, and the group rebalances."""
        group = self.groups.get(group_id)
        if group is None or generation_id != group.generation_id:
            return
        if group.is_in(Completing, Stable) and group.pending_sync_members:
            missing = sorted(group.pending_sync_members)
            for member_id in missing:
                group.remove(member_id)
                self.timer.cancel(heartbeat_key(group_id, member_id))
            self._prepare_rebalance(group, f"removing {missing} on pending sync request expiration")

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.timer.cancel(sync_key(group.group_id))

    # ---- heartbeats and session expiry ----

    def _reschedule_heartbeat(self, group: ClassicGroup, member: Member, timeout_ms: int | None = None) -> None:
        group_id, member_id = group.group_id, member.member_id
        self.timer.schedule(
            heartbeat_key(group_id, member_id),
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda: self.expire_heartbeat(group_id, member_id),
        )

    def reschedule_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is not None:
            self._reschedule_heartbeat(group, member)

    def expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.is_in(Dead):
            return
        if group.is_pending_member(member_id):
            log.info("pending member %s of group %s removed after its session timeout", member_id, group_id)
            group.remove(member_id)
            if group.is_in(Preparing) and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is not None and not member.has_satisfied_heartbeat():
            log.info("member %s of group %s has failed (session timeout %d ms), removing it",
                     member_id, group_id, member.session_timeout_ms)
            self._remove_member(group, member, f"removing member {member_id} on heartbeat expiration")

    def _remove_member(self, group: ClassicGroup, member: Member, reason: str) -> None:
        group.complete_join(member, join_error(UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.is_in(Stable, Completing):
            self._prepare_rebalance_or_complete_join(group, reason)
        elif group.is_in(Preparing) and group.has_all_members_joined():
            self._complete_join(group)

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = self._validate_generation(group, member_id, instance_id, generation_id)
        if error != ErrorCode.NONE:
            return error
        if group.is_in(Empty):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.reschedule_heartbeat(group, member_id)
        return ErrorCode.REBALANCE_IN_PROGRESS if group.is_in(Preparing) else ErrorCode.NONE

    # ---- SyncGroup ----

    def sync(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int,
        protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes], respond: Responder,
    ) -> None:
        """Handle a SyncGroup; followers wait (``respond`` is kept) until the leader's assignment is stored."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(Empty):
            respond(sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        error = self._validate_sync(group, member_id, instance_id, generation_id, protocol_type, protocol_name)
        if error != ErrorCode.NONE:
            respond(sync_error(error))
        elif group.is_in(Preparing):
            respond(sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_in(Completing):
            group.members[member_id].awaiting_sync = respond
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                self._store_assignment(group, member_id, assignments)
        elif group.is_in(Stable):
            self._remove_pending_sync_member(group, member_id)
            respond({
                "error_code": ErrorCode.NONE, "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
                "assignment": group.members[member_id].assignment,
            })

    @staticmethod
    def _validate_generation(group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        """What Heartbeat and SyncGroup both check first: a live group, a known member, its generation."""
        if group.is_in(Dead):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(member_id, instance_id)
        if error != ErrorCode.NONE:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    @classmethod
    def _validate_sync(
        cls, group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int,
        protocol_type: str | None, protocol_name: str | None,
    ) -> ErrorCode:
        error = cls._validate_generation(group, member_id, instance_id, generation_id)
        if error != ErrorCode.NONE:
            return error
        for asked, actual in ((protocol_type, group.protocol_type), (protocol_name, group.protocol_name)):
            if asked is not None and actual is not None and asked != actual:
                return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return ErrorCode.NONE

    def _store_assignment(self, group: ClassicGroup, leader_id: str, assignments: dict[str, bytes]) -> None:
        log.info("assignment received from leader %s for group %s generation %d (%d members)",
                 leader_id, group.group_id, group.generation_id, len(group.members))
        assignment = {member_id: assignments.get(member_id, b"") for member_id in group.members}
        missing = [member_id for member_id in group.members if member_id not in assignments]
        if missing:
            log.warning("group %s generation %d: empty assignment for members %s", group.group_id, group.generation_id, missing)
        error = self.persist_group(group, assignment)
        if error != ErrorCode.NONE:
            self._reset_and_propagate_assignment(group, error)
            self._prepare_rebalance_or_complete_join(group, f"error {error.name} storing the group assignment")
            return
        for member_id, member in group.members.items():
            member.assignment = assignment[member_id]
        self._propagate_assignment(group, ErrorCode.NONE)
        group.transition_to(Stable, self.timer.now_ms())

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self.timer.cancel(sync_key(group.group_id))

    def abort_pending(self, group: ClassicGroup, error: ErrorCode) -> None:
        """Answer every JoinGroup and SyncGroup the group holds with ``error`` (the group is being converted)."""
        for member in group.members.values():
            group.complete_join(member, join_error(member.member_id, error))
            group.complete_sync(member, sync_error(error))

    def _reset_and_propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            answered = group.complete_sync(member, {
                "error_code": error,
                "protocol_type": group.protocol_type if ok else None,
                "protocol_name": group.protocol_name if ok else None,
                "assignment": member.assignment,
            })
            if answered:
                self._reschedule_heartbeat(group, member)

    # ---- LeaveGroup ----

    def leave(self, group_id: str, leaving: list[LeavingMember]) -> tuple[ErrorCode, list[dict[str, Any]]]:
        """(group-level error, one answer per leaving member)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [self._leave_answer(m, ErrorCode.UNKNOWN_MEMBER_ID) for m in leaving]
        if group.is_in(Dead):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        answers = []
        for member in leaving:
            reason = member.reason or "not provided"
            if member.member_id == UNKNOWN_MEMBER_ID:
                static_id = group.static_members.get(member.group_instance_id) if member.group_instance_id else None
                if static_id is None:
                    answers.append(self._leave_answer(member, ErrorCode.UNKNOWN_MEMBER_ID))
                    continue
                self._remove_leaving_member(group, static_id, reason)
            elif group.is_pending_member(member.member_id):
                group.remove(member.member_id)
                self.timer.cancel(heartbeat_key(group_id, member.member_id))
                log.info("pending member %s left group %s (reason: %s)", member.member_id, group_id, reason)
            else:
                error = group.validate_member(member.member_id, member.group_instance_id)
                if error != ErrorCode.NONE:
                    answers.append(self._leave_answer(member, error))
                    continue
                self._remove_leaving_member(group, member.member_id, reason)
            answers.append(self._leave_answer(member, ErrorCode.NONE))
        if any(answer["error_code"] == ErrorCode.NONE for answer in answers):
            if group.is_in(Stable, Completing):
                self._prepare_rebalance_or_complete_join(group, "members left the group")
            elif group.is_in(Preparing):
                self._maybe_complete_join_phase(group)
        return ErrorCode.NONE, answers

    @staticmethod
    def _leave_answer(member: LeavingMember, error: ErrorCode) -> dict[str, Any]:
        return {"member_id": member.member_id, "group_instance_id": member.group_instance_id, "error_code": error}

    def _remove_leaving_member(self, group: ClassicGroup, member_id: str, reason: str) -> None:
        self.timer.cancel(heartbeat_key(group.group_id, member_id))
        log.info("member %s left group %s (reason: %s)", member_id, group.group_id, reason)
        member = group.members[member_id]
        group.complete_join(member, join_error(UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)

    # ---- loading ----

    def on_loaded(self, group: ClassicGroup) -> None:
        """A group read back from the log: its members get a full session to heartbeat again."""
        log.info("loaded group %s (generation %d, %d members, %s)",
                 group.group_id, group.generation_id, len(group.members), group.state.value)
        for member in group.members.values():
            self._reschedule_heartbeat(group, member)
        if len(group.members) > self.config.max_size:
            self._prepare_rebalance(group, f"loaded group is over capacity {self.config.max_size}")

    def cancel_timers(self, group: ClassicGroup) -> None:
        for key in (join_key(group.group_id), sync_key(group.group_id)):
            self.timer.cancel(key)
        for member_id in (*group.members, *group.pending_join_members):
            self.timer.cancel(heartbeat_key(group.group_id, member_id))
