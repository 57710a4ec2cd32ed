"""Typed models of the partner API, generated from internal/openapi/openapi.yaml.

Do not edit: run tools/gen_models.py. Every class keeps the OpenAPI schema
it came from in SCHEMA and its JSON names in WIRE, so a test can check the
fields against the document. Unknown JSON fields are ignored when parsing
(the platform may add fields); missing ones become None."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Type


def _v(d: Mapping[str, Any], key: str) -> Any:
    """A scalar field as sent (None when missing)."""
    return d.get(key)


def _obj(cls: Any, v: Any) -> Any:
    """Parse a nested object, keeping None as None."""
    return None if v is None else cls.from_dict(v)


def _objs(cls: Any, v: Any) -> Any:
    """Parse a list of nested objects, keeping None as None."""
    return None if v is None else [cls.from_dict(i) for i in v]


def _out(v: Any) -> Any:
    """JSON form of a field value (nested models become dicts)."""
    if isinstance(v, list):
        return [_out(i) for i in v]
    if hasattr(v, "to_dict"):
        return v.to_dict()
    return v


@dataclass
class RegisterRequest:
    """The OpenAPI schema RegisterRequest."""

    SCHEMA: ClassVar[str] = "RegisterRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "channel_user_id": "channel_user_id",
        "user": "user",
        "family_groups": "family_groups",
        "family_members": "family_members",
    }
    REQUIRED: ClassVar[List[str]] = ["channel_user_id", "user"]

    channel_user_id: str
    user: UserProfile
    family_groups: Optional[List[FamilyGroupInput]] = None
    family_members: Optional[List[FamilyMemberRegisterInput]] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RegisterRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            channel_user_id=_v(d, "channel_user_id"),
            user=_obj(UserProfile, d.get("user")),
            family_groups=_objs(FamilyGroupInput, d.get("family_groups")),
            family_members=_objs(FamilyMemberRegisterInput, d.get("family_members")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["channel_user_id"] = _out(self.channel_user_id)
        out["user"] = _out(self.user)
        if self.family_groups is not None:
            out["family_groups"] = _out(self.family_groups)
        if self.family_members is not None:
            out["family_members"] = _out(self.family_members)
        return out


@dataclass
class UserProfile:
    """The user object of register (OpenAPI UserProfile)."""

    SCHEMA: ClassVar[str] = "UserProfile"
    WIRE: ClassVar[Dict[str, str]] = {
        "name": "name",
        "nickname": "nickname",
        "gender": "gender",
        "avatar": "avatar",
        "phone": "phone",
        "email": "email",
        "birth_date": "birth_date",
    }
    REQUIRED: ClassVar[List[str]] = ["name"]

    name: str
    nickname: Optional[str] = None
    gender: Optional[str] = None
    avatar: Optional[str] = None
    phone: Optional[str] = None
    email: Optional[str] = None
    birth_date: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserProfile:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            name=_v(d, "name"),
            nickname=_v(d, "nickname"),
            gender=_v(d, "gender"),
            avatar=_v(d, "avatar"),
            phone=_v(d, "phone"),
            email=_v(d, "email"),
            birth_date=_v(d, "birth_date"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["name"] = _out(self.name)
        if self.nickname is not None:
            out["nickname"] = _out(self.nickname)
        if self.gender is not None:
            out["gender"] = _out(self.gender)
        if self.avatar is not None:
            out["avatar"] = _out(self.avatar)
        if self.phone is not None:
            out["phone"] = _out(self.phone)
        if self.email is not None:
            out["email"] = _out(self.email)
        if self.birth_date is not None:
            out["birth_date"] = _out(self.birth_date)
        return out


@dataclass
class FamilyGroupInput:
    """The OpenAPI schema FamilyGroupInput."""

    SCHEMA: ClassVar[str] = "FamilyGroupInput"
    WIRE: ClassVar[Dict[str, str]] = {
        "app_group_id": "app_group_id",
        "name": "name",
    }
    REQUIRED: ClassVar[List[str]] = ["app_group_id", "name"]

    app_group_id: int
    name: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyGroupInput:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            app_group_id=_v(d, "app_group_id"),
            name=_v(d, "name"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["app_group_id"] = _out(self.app_group_id)
        out["name"] = _out(self.name)
        return out


@dataclass
class FamilyMemberRegisterInput:
    """A family member in the one-step register, which alone accepts id_type and id_number (OpenAPI FamilyMemberRegisterInput)."""

    SCHEMA: ClassVar[str] = "FamilyMemberRegisterInput"
    WIRE: ClassVar[Dict[str, str]] = {
        "app_user_id": "app_user_id",
        "app_group_id": "app_group_id",
        "name": "name",
        "relationship": "relationship",
        "gender": "gender",
        "birth_date": "birth_date",
        "phone": "phone",
        "height": "height",
        "weight": "weight",
        "blood_type": "blood_type",
        "is_default": "is_default",
        "id_type": "id_type",
        "id_number": "id_number",
    }
    REQUIRED: ClassVar[List[str]] = ["app_user_id", "app_group_id", "name", "relationship"]

    app_user_id: str
    app_group_id: int
    name: str
    relationship: str
    gender: Optional[str] = None
    birth_date: Optional[str] = None
    phone: Optional[str] = None
    height: Optional[int] = None
    weight: Optional[int] = None
    blood_type: Optional[str] = None
    is_default: Optional[bool] = None
    id_type: Optional[str] = None
    id_number: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyMemberRegisterInput:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            app_user_id=_v(d, "app_user_id"),
            app_group_id=_v(d, "app_group_id"),
            name=_v(d, "name"),
            relationship=_v(d, "relationship"),
            gender=_v(d, "gender"),
            birth_date=_v(d, "birth_date"),
            phone=_v(d, "phone"),
            height=_v(d, "height"),
            weight=_v(d, "weight"),
            blood_type=_v(d, "blood_type"),
            is_default=_v(d, "is_default"),
            id_type=_v(d, "id_type"),
            id_number=_v(d, "id_number"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["app_user_id"] = _out(self.app_user_id)
        out["app_group_id"] = _out(self.app_group_id)
        out["name"] = _out(self.name)
        out["relationship"] = _out(self.relationship)
        if self.gender is not None:
            out["gender"] = _out(self.gender)
        if self.birth_date is not None:
            out["birth_date"] = _out(self.birth_date)
        if self.phone is not None:
            out["phone"] = _out(self.phone)
        if self.height is not None:
            out["height"] = _out(self.height)
        if self.weight is not None:
            out["weight"] = _out(self.weight)
        if self.blood_type is not None:
            out["blood_type"] = _out(self.blood_type)
        if self.is_default is not None:
            out["is_default"] = _out(self.is_default)
        if self.id_type is not None:
            out["id_type"] = _out(self.id_type)
        if self.id_number is not None:
            out["id_number"] = _out(self.id_number)
        return out


@dataclass
class RegisterResult:
    """The user's mapping: on a first registration what was created; on a repeat the current non-dissolved groups and live members (OpenAPI RegisterResult)."""

    SCHEMA: ClassVar[str] = "RegisterResult"
    WIRE: ClassVar[Dict[str, str]] = {
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "created": "created",
        "family_groups": "family_groups",
        "family_members": "family_members",
    }
    REQUIRED: ClassVar[List[str]] = ["open_user_id", "channel_user_id", "created", "family_groups", "family_members"]

    open_user_id: int
    channel_user_id: str
    created: bool
    family_groups: List[GroupRef]
    family_members: List[MemberRef]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RegisterResult:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            created=_v(d, "created"),
            family_groups=_objs(GroupRef, d.get("family_groups")),
            family_members=_objs(MemberRef, d.get("family_members")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["created"] = _out(self.created)
        out["family_groups"] = _out(self.family_groups)
        out["family_members"] = _out(self.family_members)
        return out


@dataclass
class GroupRef:
    """The OpenAPI schema GroupRef."""

    SCHEMA: ClassVar[str] = "GroupRef"
    WIRE: ClassVar[Dict[str, str]] = {
        "family_group_id": "family_group_id",
        "app_group_id": "app_group_id",
    }
    REQUIRED: ClassVar[List[str]] = ["family_group_id", "app_group_id"]

    family_group_id: int
    app_group_id: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GroupRef:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            family_group_id=_v(d, "family_group_id"),
            app_group_id=_v(d, "app_group_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["family_group_id"] = _out(self.family_group_id)
        out["app_group_id"] = _out(self.app_group_id)
        return out


@dataclass
class MemberRef:
    """The OpenAPI schema MemberRef."""

    SCHEMA: ClassVar[str] = "MemberRef"
    WIRE: ClassVar[Dict[str, str]] = {
        "member_id": "member_id",
        "app_user_id": "app_user_id",
    }
    REQUIRED: ClassVar[List[str]] = ["member_id", "app_user_id"]

    member_id: int
    app_user_id: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemberRef:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            member_id=_v(d, "member_id"),
            app_user_id=_v(d, "app_user_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["member_id"] = _out(self.member_id)
        out["app_user_id"] = _out(self.app_user_id)
        return out


@dataclass
class Snapshot:
    """The OpenAPI schema Snapshot."""

    SCHEMA: ClassVar[str] = "Snapshot"
    WIRE: ClassVar[Dict[str, str]] = {
        "user": "user",
        "family_groups": "family_groups",
        "family_members": "family_members",
    }
    REQUIRED: ClassVar[List[str]] = ["user", "family_groups", "family_members"]

    user: User
    family_groups: List[FamilyGroup]
    family_members: List[FamilyMember]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Snapshot:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            user=_obj(User, d.get("user")),
            family_groups=_objs(FamilyGroup, d.get("family_groups")),
            family_members=_objs(FamilyMember, d.get("family_members")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["user"] = _out(self.user)
        out["family_groups"] = _out(self.family_groups)
        out["family_members"] = _out(self.family_members)
        return out


@dataclass
class User:
    """The user as the snapshot returns it (OpenAPI User)."""

    SCHEMA: ClassVar[str] = "User"
    WIRE: ClassVar[Dict[str, str]] = {
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "name": "name",
        "nickname": "nickname",
        "gender": "gender",
        "avatar": "avatar",
        "phone": "phone",
        "email": "email",
        "birth_date": "birth_date",
        "status": "status",
        "registered_at": "registered_at",
    }
    REQUIRED: ClassVar[List[str]] = ["open_user_id", "channel_user_id", "name", "nickname", "gender", "avatar", "phone", "email", "birth_date", "status", "registered_at"]

    open_user_id: int
    channel_user_id: str
    name: str
    nickname: Optional[str]
    gender: str
    avatar: Optional[str]
    phone: Optional[str]
    email: Optional[str]
    birth_date: Optional[str]
    status: str
    registered_at: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> User:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            name=_v(d, "name"),
            nickname=_v(d, "nickname"),
            gender=_v(d, "gender"),
            avatar=_v(d, "avatar"),
            phone=_v(d, "phone"),
            email=_v(d, "email"),
            birth_date=_v(d, "birth_date"),
            status=_v(d, "status"),
            registered_at=_v(d, "registered_at"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["name"] = _out(self.name)
        out["nickname"] = _out(self.nickname)
        out["gender"] = _out(self.gender)
        out["avatar"] = _out(self.avatar)
        out["phone"] = _out(self.phone)
        out["email"] = _out(self.email)
        out["birth_date"] = _out(self.birth_date)
        out["status"] = _out(self.status)
        out["registered_at"] = _out(self.registered_at)
        return out


@dataclass
class FamilyGroup:
    """The OpenAPI schema FamilyGroup."""

    SCHEMA: ClassVar[str] = "FamilyGroup"
    WIRE: ClassVar[Dict[str, str]] = {
        "family_group_id": "family_group_id",
        "app_group_id": "app_group_id",
        "name": "name",
        "member_count": "member_count",
    }
    REQUIRED: ClassVar[List[str]] = ["family_group_id", "app_group_id", "name", "member_count"]

    family_group_id: int
    app_group_id: int
    name: str
    member_count: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyGroup:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            family_group_id=_v(d, "family_group_id"),
            app_group_id=_v(d, "app_group_id"),
            name=_v(d, "name"),
            member_count=_v(d, "member_count"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["family_group_id"] = _out(self.family_group_id)
        out["app_group_id"] = _out(self.app_group_id)
        out["name"] = _out(self.name)
        out["member_count"] = _out(self.member_count)
        return out


@dataclass
class FamilyMember:
    """A live member as the snapshot returns it (id_number is never returned) (OpenAPI FamilyMember)."""

    SCHEMA: ClassVar[str] = "FamilyMember"
    WIRE: ClassVar[Dict[str, str]] = {
        "member_id": "member_id",
        "app_user_id": "app_user_id",
        "app_group_id": "app_group_id",
        "family_group_id": "family_group_id",
        "name": "name",
        "relationship": "relationship",
        "gender": "gender",
        "birth_date": "birth_date",
        "phone": "phone",
        "id_type": "id_type",
        "height": "height",
        "weight": "weight",
        "blood_type": "blood_type",
        "is_default": "is_default",
        "updated_at": "updated_at",
    }
    REQUIRED: ClassVar[List[str]] = ["member_id", "app_user_id", "app_group_id", "family_group_id", "name", "relationship", "gender", "birth_date", "phone", "id_type", "height", "weight", "blood_type", "is_default", "updated_at"]

    member_id: int
    app_user_id: str
    app_group_id: int
    family_group_id: int
    name: str
    relationship: str
    gender: Optional[str]
    birth_date: Optional[str]
    phone: Optional[str]
    id_type: Optional[str]
    height: Optional[int]
    weight: Optional[int]
    blood_type: Optional[str]
    is_default: bool
    updated_at: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyMember:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            member_id=_v(d, "member_id"),
            app_user_id=_v(d, "app_user_id"),
            app_group_id=_v(d, "app_group_id"),
            family_group_id=_v(d, "family_group_id"),
            name=_v(d, "name"),
            relationship=_v(d, "relationship"),
            gender=_v(d, "gender"),
            birth_date=_v(d, "birth_date"),
            phone=_v(d, "phone"),
            id_type=_v(d, "id_type"),
            height=_v(d, "height"),
            weight=_v(d, "weight"),
            blood_type=_v(d, "blood_type"),
            is_default=_v(d, "is_default"),
            updated_at=_v(d, "updated_at"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["member_id"] = _out(self.member_id)
        out["app_user_id"] = _out(self.app_user_id)
        out["app_group_id"] = _out(self.app_group_id)
        out["family_group_id"] = _out(self.family_group_id)
        out["name"] = _out(self.name)
        out["relationship"] = _out(self.relationship)
        out["gender"] = _out(self.gender)
        out["birth_date"] = _out(self.birth_date)
        out["phone"] = _out(self.phone)
        out["id_type"] = _out(self.id_type)
        out["height"] = _out(self.height)
        out["weight"] = _out(self.weight)
        out["blood_type"] = _out(self.blood_type)
        out["is_default"] = _out(self.is_default)
        out["updated_at"] = _out(self.updated_at)
        return out


@dataclass
class UserPatch:
    """PATCH body; every field optional and only sent fields change (OpenAPI UserPatch)."""

    SCHEMA: ClassVar[str] = "UserPatch"
    WIRE: ClassVar[Dict[str, str]] = {
        "name": "name",
        "nickname": "nickname",
        "gender": "gender",
        "avatar": "avatar",
        "phone": "phone",
        "email": "email",
        "birth_date": "birth_date",
    }
    REQUIRED: ClassVar[List[str]] = []

    name: Optional[str] = None
    nickname: Optional[str] = None
    gender: Optional[str] = None
    avatar: Optional[str] = None
    phone: Optional[str] = None
    email: Optional[str] = None
    birth_date: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserPatch:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            name=_v(d, "name"),
            nickname=_v(d, "nickname"),
            gender=_v(d, "gender"),
            avatar=_v(d, "avatar"),
            phone=_v(d, "phone"),
            email=_v(d, "email"),
            birth_date=_v(d, "birth_date"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        if self.name is not None:
            out["name"] = _out(self.name)
        if self.nickname is not None:
            out["nickname"] = _out(self.nickname)
        if self.gender is not None:
            out["gender"] = _out(self.gender)
        if self.avatar is not None:
            out["avatar"] = _out(self.avatar)
        if self.phone is not None:
            out["phone"] = _out(self.phone)
        if self.email is not None:
            out["email"] = _out(self.email)
        if self.birth_date is not None:
            out["birth_date"] = _out(self.birth_date)
        return out


@dataclass
class FamilyGroupUpsertResult:
    """The OpenAPI schema FamilyGroupUpsertResult."""

    SCHEMA: ClassVar[str] = "FamilyGroupUpsertResult"
    WIRE: ClassVar[Dict[str, str]] = {
        "family_group_id": "family_group_id",
        "app_group_id": "app_group_id",
        "name": "name",
        "created": "created",
    }
    REQUIRED: ClassVar[List[str]] = ["family_group_id", "app_group_id", "name", "created"]

    family_group_id: int
    app_group_id: int
    name: str
    created: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyGroupUpsertResult:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            family_group_id=_v(d, "family_group_id"),
            app_group_id=_v(d, "app_group_id"),
            name=_v(d, "name"),
            created=_v(d, "created"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["family_group_id"] = _out(self.family_group_id)
        out["app_group_id"] = _out(self.app_group_id)
        out["name"] = _out(self.name)
        out["created"] = _out(self.created)
        return out


@dataclass
class FamilyMemberUpsertInput:
    """The member upsert body (OpenAPI FamilyMemberUpsertInput)."""

    SCHEMA: ClassVar[str] = "FamilyMemberUpsertInput"
    WIRE: ClassVar[Dict[str, str]] = {
        "app_user_id": "app_user_id",
        "app_group_id": "app_group_id",
        "name": "name",
        "relationship": "relationship",
        "gender": "gender",
        "birth_date": "birth_date",
        "phone": "phone",
        "height": "height",
        "weight": "weight",
        "blood_type": "blood_type",
        "is_default": "is_default",
    }
    REQUIRED: ClassVar[List[str]] = ["app_user_id", "app_group_id", "name", "relationship"]

    app_user_id: str
    app_group_id: int
    name: str
    relationship: str
    gender: Optional[str] = None
    birth_date: Optional[str] = None
    phone: Optional[str] = None
    height: Optional[int] = None
    weight: Optional[int] = None
    blood_type: Optional[str] = None
    is_default: Optional[bool] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyMemberUpsertInput:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            app_user_id=_v(d, "app_user_id"),
            app_group_id=_v(d, "app_group_id"),
            name=_v(d, "name"),
            relationship=_v(d, "relationship"),
            gender=_v(d, "gender"),
            birth_date=_v(d, "birth_date"),
            phone=_v(d, "phone"),
            height=_v(d, "height"),
            weight=_v(d, "weight"),
            blood_type=_v(d, "blood_type"),
            is_default=_v(d, "is_default"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["app_user_id"] = _out(self.app_user_id)
        out["app_group_id"] = _out(self.app_group_id)
        out["name"] = _out(self.name)
        out["relationship"] = _out(self.relationship)
        if self.gender is not None:
            out["gender"] = _out(self.gender)
        if self.birth_date is not None:
            out["birth_date"] = _out(self.birth_date)
        if self.phone is not None:
            out["phone"] = _out(self.phone)
        if self.height is not None:
            out["height"] = _out(self.height)
        if self.weight is not None:
            out["weight"] = _out(self.weight)
        if self.blood_type is not None:
            out["blood_type"] = _out(self.blood_type)
        if self.is_default is not None:
            out["is_default"] = _out(self.is_default)
        return out


@dataclass
class FamilyMemberUpsertResult:
    """The OpenAPI schema FamilyMemberUpsertResult."""

    SCHEMA: ClassVar[str] = "FamilyMemberUpsertResult"
    WIRE: ClassVar[Dict[str, str]] = {
        "member_id": "member_id",
        "app_user_id": "app_user_id",
        "created": "created",
    }
    REQUIRED: ClassVar[List[str]] = ["member_id", "app_user_id", "created"]

    member_id: int
    app_user_id: str
    created: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyMemberUpsertResult:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            member_id=_v(d, "member_id"),
            app_user_id=_v(d, "app_user_id"),
            created=_v(d, "created"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["member_id"] = _out(self.member_id)
        out["app_user_id"] = _out(self.app_user_id)
        out["created"] = _out(self.created)
        return out


@dataclass
class DeliveryPage:
    """The OpenAPI schema DeliveryPage."""

    SCHEMA: ClassVar[str] = "DeliveryPage"
    WIRE: ClassVar[Dict[str, str]] = {
        "deliveries": "deliveries",
        "next_cursor": "next_cursor",
    }
    REQUIRED: ClassVar[List[str]] = ["deliveries", "next_cursor"]

    deliveries: List[Delivery]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeliveryPage:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            deliveries=_objs(Delivery, d.get("deliveries")),
            next_cursor=_v(d, "next_cursor"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["deliveries"] = _out(self.deliveries)
        out["next_cursor"] = _out(self.next_cursor)
        return out


@dataclass
class Delivery:
    """One delivery, as the delivery log lists it (OpenAPI Delivery)."""

    SCHEMA: ClassVar[str] = "Delivery"
    WIRE: ClassVar[Dict[str, str]] = {
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "event": "event",
        "status": "status",
        "attempts": "attempts",
        "next_attempt_at": "next_attempt_at",
        "last_status_code": "last_status_code",
        "last_error": "last_error",
        "last_error_class": "last_error_class",
        "created_at": "created_at",
        "updated_at": "updated_at",
        "cursor": "cursor",
        "endpoint_id": "endpoint_id",
    }
    REQUIRED: ClassVar[List[str]] = ["delivery_id", "app_id", "event", "status", "attempts", "next_attempt_at", "last_status_code", "last_error", "last_error_class", "created_at", "updated_at", "cursor"]

    delivery_id: str
    app_id: int
    event: str
    status: str
    attempts: int
    next_attempt_at: Optional[str]
    last_status_code: Optional[int]
    last_error: Optional[str]
    last_error_class: Optional[str]
    created_at: str
    updated_at: str
    cursor: str
    endpoint_id: Optional[int] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Delivery:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            event=_v(d, "event"),
            status=_v(d, "status"),
            attempts=_v(d, "attempts"),
            next_attempt_at=_v(d, "next_attempt_at"),
            last_status_code=_v(d, "last_status_code"),
            last_error=_v(d, "last_error"),
            last_error_class=_v(d, "last_error_class"),
            created_at=_v(d, "created_at"),
            updated_at=_v(d, "updated_at"),
            cursor=_v(d, "cursor"),
            endpoint_id=_v(d, "endpoint_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["event"] = _out(self.event)
        out["status"] = _out(self.status)
        out["attempts"] = _out(self.attempts)
        out["next_attempt_at"] = _out(self.next_attempt_at)
        out["last_status_code"] = _out(self.last_status_code)
        out["last_error"] = _out(self.last_error)
        out["last_error_class"] = _out(self.last_error_class)
        out["created_at"] = _out(self.created_at)
        out["updated_at"] = _out(self.updated_at)
        out["cursor"] = _out(self.cursor)
        if self.endpoint_id is not None:
            out["endpoint_id"] = _out(self.endpoint_id)
        return out


@dataclass
class DeliveryDetail:
    """One delivery with its body and attempt log (OpenAPI DeliveryDetail)."""

    SCHEMA: ClassVar[str] = "DeliveryDetail"
    WIRE: ClassVar[Dict[str, str]] = {
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "event": "event",
        "status": "status",
        "attempts": "attempts",
        "next_attempt_at": "next_attempt_at",
        "last_status_code": "last_status_code",
        "last_error": "last_error",
        "last_error_class": "last_error_class",
        "created_at": "created_at",
        "updated_at": "updated_at",
        "cursor": "cursor",
        "payload": "payload",
        "attempt_log": "attempt_log",
        "endpoint_id": "endpoint_id",
    }
    REQUIRED: ClassVar[List[str]] = ["delivery_id", "app_id", "event", "status", "attempts", "next_attempt_at", "last_status_code", "last_error", "last_error_class", "created_at", "updated_at", "cursor", "payload", "attempt_log"]

    delivery_id: str
    app_id: int
    event: str
    status: str
    attempts: int
    next_attempt_at: Optional[str]
    last_status_code: Optional[int]
    last_error: Optional[str]
    last_error_class: Optional[str]
    created_at: str
    updated_at: str
    cursor: str
    payload: Optional[Any]
    attempt_log: List[DeliveryAttempt]
    endpoint_id: Optional[int] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeliveryDetail:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            event=_v(d, "event"),
            status=_v(d, "status"),
            attempts=_v(d, "attempts"),
            next_attempt_at=_v(d, "next_attempt_at"),
            last_status_code=_v(d, "last_status_code"),
            last_error=_v(d, "last_error"),
            last_error_class=_v(d, "last_error_class"),
            created_at=_v(d, "created_at"),
            updated_at=_v(d, "updated_at"),
            cursor=_v(d, "cursor"),
            payload=_v(d, "payload"),
            attempt_log=_objs(DeliveryAttempt, d.get("attempt_log")),
            endpoint_id=_v(d, "endpoint_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["event"] = _out(self.event)
        out["status"] = _out(self.status)
        out["attempts"] = _out(self.attempts)
        out["next_attempt_at"] = _out(self.next_attempt_at)
        out["last_status_code"] = _out(self.last_status_code)
        out["last_error"] = _out(self.last_error)
        out["last_error_class"] = _out(self.last_error_class)
        out["created_at"] = _out(self.created_at)
        out["updated_at"] = _out(self.updated_at)
        out["cursor"] = _out(self.cursor)
        out["payload"] = _out(self.payload)
        out["attempt_log"] = _out(self.attempt_log)
        if self.endpoint_id is not None:
            out["endpoint_id"] = _out(self.endpoint_id)
        return out


@dataclass
class DeliveryAttempt:
    """One POST of a delivery (OpenAPI DeliveryAttempt)."""

    SCHEMA: ClassVar[str] = "DeliveryAttempt"
    WIRE: ClassVar[Dict[str, str]] = {
        "attempt": "attempt",
        "at": "at",
        "status_code": "status_code",
        "latency_ms": "latency_ms",
        "error": "error",
        "error_class": "error_class",
        "outcome": "outcome",
        "response_excerpt": "response_excerpt",
    }
    REQUIRED: ClassVar[List[str]] = ["attempt", "at", "status_code", "latency_ms", "error", "error_class", "outcome"]

    attempt: int
    at: str
    status_code: Optional[int]
    latency_ms: int
    error: Optional[str]
    error_class: Optional[str]
    outcome: str
    response_excerpt: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeliveryAttempt:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            attempt=_v(d, "attempt"),
            at=_v(d, "at"),
            status_code=_v(d, "status_code"),
            latency_ms=_v(d, "latency_ms"),
            error=_v(d, "error"),
            error_class=_v(d, "error_class"),
            outcome=_v(d, "outcome"),
            response_excerpt=_v(d, "response_excerpt"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["attempt"] = _out(self.attempt)
        out["at"] = _out(self.at)
        out["status_code"] = _out(self.status_code)
        out["latency_ms"] = _out(self.latency_ms)
        out["error"] = _out(self.error)
        out["error_class"] = _out(self.error_class)
        out["outcome"] = _out(self.outcome)
        if self.response_excerpt is not None:
            out["response_excerpt"] = _out(self.response_excerpt)
        return out


@dataclass
class ResendResult:
    """The OpenAPI schema ResendResult."""

    SCHEMA: ClassVar[str] = "ResendResult"
    WIRE: ClassVar[Dict[str, str]] = {
        "delivery_id": "delivery_id",
        "queued": "queued",
    }
    REQUIRED: ClassVar[List[str]] = ["delivery_id", "queued"]

    delivery_id: str
    queued: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ResendResult:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            delivery_id=_v(d, "delivery_id"),
            queued=_v(d, "queued"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["delivery_id"] = _out(self.delivery_id)
        out["queued"] = _out(self.queued)
        return out


@dataclass
class WebhookEndpointList:
    """The OpenAPI schema WebhookEndpointList."""

    SCHEMA: ClassVar[str] = "WebhookEndpointList"
    WIRE: ClassVar[Dict[str, str]] = {
        "endpoints": "endpoints",
        "max_endpoints": "max_endpoints",
    }
    REQUIRED: ClassVar[List[str]] = ["endpoints", "max_endpoints"]

    endpoints: List[WebhookEndpoint]
    max_endpoints: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookEndpointList:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            endpoints=_objs(WebhookEndpoint, d.get("endpoints")),
            max_endpoints=_v(d, "max_endpoints"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["endpoints"] = _out(self.endpoints)
        out["max_endpoints"] = _out(self.max_endpoints)
        return out


@dataclass
class WebhookEndpoint:
    """A webhook endpoint of the calling app; never a secret (OpenAPI WebhookEndpoint)."""

    SCHEMA: ClassVar[str] = "WebhookEndpoint"
    WIRE: ClassVar[Dict[str, str]] = {
        "endpoint_id": "endpoint_id",
        "default": "default",
        "url": "url",
        "events": "events",
        "enabled": "enabled",
        "signing_secret": "signing_secret",
        "pending_secret": "pending_secret",
        "created_at": "created_at",
        "updated_at": "updated_at",
        "description": "description",
    }
    REQUIRED: ClassVar[List[str]] = ["endpoint_id", "default", "url", "events", "enabled", "signing_secret", "pending_secret", "created_at", "updated_at"]

    endpoint_id: int
    default: bool
    url: str
    events: List[str]
    enabled: bool
    signing_secret: str
    pending_secret: bool
    created_at: str
    updated_at: str
    description: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookEndpoint:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            endpoint_id=_v(d, "endpoint_id"),
            default=_v(d, "default"),
            url=_v(d, "url"),
            events=_v(d, "events"),
            enabled=_v(d, "enabled"),
            signing_secret=_v(d, "signing_secret"),
            pending_secret=_v(d, "pending_secret"),
            created_at=_v(d, "created_at"),
            updated_at=_v(d, "updated_at"),
            description=_v(d, "description"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["endpoint_id"] = _out(self.endpoint_id)
        out["default"] = _out(self.default)
        out["url"] = _out(self.url)
        out["events"] = _out(self.events)
        out["enabled"] = _out(self.enabled)
        out["signing_secret"] = _out(self.signing_secret)
        out["pending_secret"] = _out(self.pending_secret)
        out["created_at"] = _out(self.created_at)
        out["updated_at"] = _out(self.updated_at)
        if self.description is not None:
            out["description"] = _out(self.description)
        return out


@dataclass
class WebhookEndpointCreate:
    """The OpenAPI schema WebhookEndpointCreate."""

    SCHEMA: ClassVar[str] = "WebhookEndpointCreate"
    WIRE: ClassVar[Dict[str, str]] = {
        "url": "url",
        "events": "events",
        "enabled": "enabled",
        "description": "description",
    }
    REQUIRED: ClassVar[List[str]] = ["url"]

    url: str
    events: Optional[List[str]] = None
    enabled: Optional[bool] = None
    description: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookEndpointCreate:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            url=_v(d, "url"),
            events=_v(d, "events"),
            enabled=_v(d, "enabled"),
            description=_v(d, "description"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["url"] = _out(self.url)
        if self.events is not None:
            out["events"] = _out(self.events)
        if self.enabled is not None:
            out["enabled"] = _out(self.enabled)
        if self.description is not None:
            out["description"] = _out(self.description)
        return out


@dataclass
class NewWebhookEndpoint:
    """An added endpoint with its secret, shown this once (OpenAPI NewWebhookEndpoint)."""

    SCHEMA: ClassVar[str] = "NewWebhookEndpoint"
    WIRE: ClassVar[Dict[str, str]] = {
        "endpoint_id": "endpoint_id",
        "default": "default",
        "url": "url",
        "events": "events",
        "enabled": "enabled",
        "signing_secret": "signing_secret",
        "pending_secret": "pending_secret",
        "created_at": "created_at",
        "updated_at": "updated_at",
        "webhook_secret": "webhook_secret",
        "description": "description",
    }
    REQUIRED: ClassVar[List[str]] = ["endpoint_id", "default", "url", "events", "enabled", "signing_secret", "pending_secret", "created_at", "updated_at", "webhook_secret"]

    endpoint_id: int
    default: bool
    url: str
    events: List[str]
    enabled: bool
    signing_secret: str
    pending_secret: bool
    created_at: str
    updated_at: str
    webhook_secret: str
    description: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NewWebhookEndpoint:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            endpoint_id=_v(d, "endpoint_id"),
            default=_v(d, "default"),
            url=_v(d, "url"),
            events=_v(d, "events"),
            enabled=_v(d, "enabled"),
            signing_secret=_v(d, "signing_secret"),
            pending_secret=_v(d, "pending_secret"),
            created_at=_v(d, "created_at"),
            updated_at=_v(d, "updated_at"),
            webhook_secret=_v(d, "webhook_secret"),
            description=_v(d, "description"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["endpoint_id"] = _out(self.endpoint_id)
        out["default"] = _out(self.default)
        out["url"] = _out(self.url)
        out["events"] = _out(self.events)
        out["enabled"] = _out(self.enabled)
        out["signing_secret"] = _out(self.signing_secret)
        out["pending_secret"] = _out(self.pending_secret)
        out["created_at"] = _out(self.created_at)
        out["updated_at"] = _out(self.updated_at)
        out["webhook_secret"] = _out(self.webhook_secret)
        if self.description is not None:
            out["description"] = _out(self.description)
        return out


@dataclass
class WebhookEndpointUpdate:
    """The OpenAPI schema WebhookEndpointUpdate."""

    SCHEMA: ClassVar[str] = "WebhookEndpointUpdate"
    WIRE: ClassVar[Dict[str, str]] = {
        "url": "url",
        "events": "events",
        "enabled": "enabled",
        "description": "description",
    }
    REQUIRED: ClassVar[List[str]] = []

    url: Optional[str] = None
    events: Optional[List[str]] = None
    enabled: Optional[bool] = None
    description: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookEndpointUpdate:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            url=_v(d, "url"),
            events=_v(d, "events"),
            enabled=_v(d, "enabled"),
            description=_v(d, "description"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        if self.url is not None:
            out["url"] = _out(self.url)
        if self.events is not None:
            out["events"] = _out(self.events)
        if self.enabled is not None:
            out["enabled"] = _out(self.enabled)
        if self.description is not None:
            out["description"] = _out(self.description)
        return out


@dataclass
class RotatedWebhookEndpoint:
    """An endpoint with its new pending secret, shown this once (OpenAPI RotatedWebhookEndpoint)."""

    SCHEMA: ClassVar[str] = "RotatedWebhookEndpoint"
    WIRE: ClassVar[Dict[str, str]] = {
        "endpoint_id": "endpoint_id",
        "default": "default",
        "url": "url",
        "events": "events",
        "enabled": "enabled",
        "signing_secret": "signing_secret",
        "pending_secret": "pending_secret",
        "created_at": "created_at",
        "updated_at": "updated_at",
        "pending_webhook_secret": "pending_webhook_secret",
        "description": "description",
    }
    REQUIRED: ClassVar[List[str]] = ["endpoint_id", "default", "url", "events", "enabled", "signing_secret", "pending_secret", "created_at", "updated_at", "pending_webhook_secret"]

    endpoint_id: int
    default: bool
    url: str
    events: List[str]
    enabled: bool
    signing_secret: str
    pending_secret: bool
    created_at: str
    updated_at: str
    pending_webhook_secret: str
    description: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RotatedWebhookEndpoint:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            endpoint_id=_v(d, "endpoint_id"),
            default=_v(d, "default"),
            url=_v(d, "url"),
            events=_v(d, "events"),
            enabled=_v(d, "enabled"),
            signing_secret=_v(d, "signing_secret"),
            pending_secret=_v(d, "pending_secret"),
            created_at=_v(d, "created_at"),
            updated_at=_v(d, "updated_at"),
            pending_webhook_secret=_v(d, "pending_webhook_secret"),
            description=_v(d, "description"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["endpoint_id"] = _out(self.endpoint_id)
        out["default"] = _out(self.default)
        out["url"] = _out(self.url)
        out["events"] = _out(self.events)
        out["enabled"] = _out(self.enabled)
        out["signing_secret"] = _out(self.signing_secret)
        out["pending_secret"] = _out(self.pending_secret)
        out["created_at"] = _out(self.created_at)
        out["updated_at"] = _out(self.updated_at)
        out["pending_webhook_secret"] = _out(self.pending_webhook_secret)
        if self.description is not None:
            out["description"] = _out(self.description)
        return out


@dataclass
class WebhookTestQueued:
    """The OpenAPI schema WebhookTestQueued."""

    SCHEMA: ClassVar[str] = "WebhookTestQueued"
    WIRE: ClassVar[Dict[str, str]] = {
        "endpoint_id": "endpoint_id",
        "event": "event",
        "queued": "queued",
    }
    REQUIRED: ClassVar[List[str]] = ["endpoint_id", "event", "queued"]

    endpoint_id: int
    event: str
    queued: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookTestQueued:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            endpoint_id=_v(d, "endpoint_id"),
            event=_v(d, "event"),
            queued=_v(d, "queued"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["endpoint_id"] = _out(self.endpoint_id)
        out["event"] = _out(self.event)
        out["queued"] = _out(self.queued)
        return out


@dataclass
class WebhookReplayRequest:
    """Give exactly one of `since` and `cursor` (OpenAPI WebhookReplayRequest)."""

    SCHEMA: ClassVar[str] = "WebhookReplayRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "events": "events",
        "endpoint_id": "endpoint_id",
        "since": "since",
        "cursor": "cursor",
        "until": "until",
    }
    REQUIRED: ClassVar[List[str]] = ["events"]

    events: List[str]
    endpoint_id: Optional[int] = None
    since: Optional[str] = None
    cursor: Optional[str] = None
    until: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookReplayRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            events=_v(d, "events"),
            endpoint_id=_v(d, "endpoint_id"),
            since=_v(d, "since"),
            cursor=_v(d, "cursor"),
            until=_v(d, "until"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["events"] = _out(self.events)
        if self.endpoint_id is not None:
            out["endpoint_id"] = _out(self.endpoint_id)
        if self.since is not None:
            out["since"] = _out(self.since)
        if self.cursor is not None:
            out["cursor"] = _out(self.cursor)
        if self.until is not None:
            out["until"] = _out(self.until)
        return out


@dataclass
class WebhookReplay:
    """The OpenAPI schema WebhookReplay."""

    SCHEMA: ClassVar[str] = "WebhookReplay"
    WIRE: ClassVar[Dict[str, str]] = {
        "replay_id": "replay_id",
        "endpoint_id": "endpoint_id",
        "events": "events",
        "status": "status",
        "since": "since",
        "until": "until",
        "cursor": "cursor",
        "matched": "matched",
        "queued": "queued",
        "delivered": "delivered",
        "erased": "erased",
        "cursor_reached": "cursor_reached",
        "end_cursor": "end_cursor",
        "requested_at": "requested_at",
        "ended_at": "ended_at",
    }
    REQUIRED: ClassVar[List[str]] = ["replay_id", "endpoint_id", "events", "status", "since", "until", "cursor", "matched", "queued", "delivered", "erased", "cursor_reached", "end_cursor", "requested_at", "ended_at"]

    replay_id: int
    endpoint_id: int
    events: List[str]
    status: str
    since: Optional[str]
    until: Optional[str]
    cursor: Optional[str]
    matched: int
    queued: int
    delivered: int
    erased: int
    cursor_reached: str
    end_cursor: str
    requested_at: str
    ended_at: Optional[str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookReplay:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            replay_id=_v(d, "replay_id"),
            endpoint_id=_v(d, "endpoint_id"),
            events=_v(d, "events"),
            status=_v(d, "status"),
            since=_v(d, "since"),
            until=_v(d, "until"),
            cursor=_v(d, "cursor"),
            matched=_v(d, "matched"),
            queued=_v(d, "queued"),
            delivered=_v(d, "delivered"),
            erased=_v(d, "erased"),
            cursor_reached=_v(d, "cursor_reached"),
            end_cursor=_v(d, "end_cursor"),
            requested_at=_v(d, "requested_at"),
            ended_at=_v(d, "ended_at"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["replay_id"] = _out(self.replay_id)
        out["endpoint_id"] = _out(self.endpoint_id)
        out["events"] = _out(self.events)
        out["status"] = _out(self.status)
        out["since"] = _out(self.since)
        out["until"] = _out(self.until)
        out["cursor"] = _out(self.cursor)
        out["matched"] = _out(self.matched)
        out["queued"] = _out(self.queued)
        out["delivered"] = _out(self.delivered)
        out["erased"] = _out(self.erased)
        out["cursor_reached"] = _out(self.cursor_reached)
        out["end_cursor"] = _out(self.end_cursor)
        out["requested_at"] = _out(self.requested_at)
        out["ended_at"] = _out(self.ended_at)
        return out


@dataclass
class PendingWebhookSecret:
    """The OpenAPI schema PendingWebhookSecret."""

    SCHEMA: ClassVar[str] = "PendingWebhookSecret"
    WIRE: ClassVar[Dict[str, str]] = {
        "app_id": "app_id",
        "pending_webhook_secret": "pending_webhook_secret",
    }
    REQUIRED: ClassVar[List[str]] = ["app_id", "pending_webhook_secret"]

    app_id: int
    pending_webhook_secret: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PendingWebhookSecret:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            app_id=_v(d, "app_id"),
            pending_webhook_secret=_v(d, "pending_webhook_secret"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["app_id"] = _out(self.app_id)
        out["pending_webhook_secret"] = _out(self.pending_webhook_secret)
        return out


@dataclass
class WebhookSecretActivated:
    """The OpenAPI schema WebhookSecretActivated."""

    SCHEMA: ClassVar[str] = "WebhookSecretActivated"
    WIRE: ClassVar[Dict[str, str]] = {
        "app_id": "app_id",
        "activated": "activated",
    }
    REQUIRED: ClassVar[List[str]] = ["app_id", "activated"]

    app_id: int
    activated: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookSecretActivated:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            app_id=_v(d, "app_id"),
            activated=_v(d, "activated"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["app_id"] = _out(self.app_id)
        out["activated"] = _out(self.activated)
        return out


@dataclass
class FeedPage:
    """The OpenAPI schema FeedPage."""

    SCHEMA: ClassVar[str] = "FeedPage"
    WIRE: ClassVar[Dict[str, str]] = {
        "events": "events",
        "next_cursor": "next_cursor",
        "has_more": "has_more",
    }
    REQUIRED: ClassVar[List[str]] = ["events", "next_cursor", "has_more"]

    events: List[FeedEvent]
    next_cursor: str
    has_more: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FeedPage:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            events=_objs(FeedEvent, d.get("events")),
            next_cursor=_v(d, "next_cursor"),
            has_more=_v(d, "has_more"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["events"] = _out(self.events)
        out["next_cursor"] = _out(self.next_cursor)
        out["has_more"] = _out(self.has_more)
        return out


@dataclass
class FeedEvent:
    """The OpenAPI schema FeedEvent."""

    SCHEMA: ClassVar[str] = "FeedEvent"
    WIRE: ClassVar[Dict[str, str]] = {
        "cursor": "cursor",
        "delivery_id": "delivery_id",
        "event": "event",
        "payload": "payload",
    }
    REQUIRED: ClassVar[List[str]] = ["cursor", "delivery_id", "event", "payload"]

    cursor: str
    delivery_id: str
    event: str
    payload: Optional[Any]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FeedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            cursor=_v(d, "cursor"),
            delivery_id=_v(d, "delivery_id"),
            event=_v(d, "event"),
            payload=_v(d, "payload"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["cursor"] = _out(self.cursor)
        out["delivery_id"] = _out(self.delivery_id)
        out["event"] = _out(self.event)
        out["payload"] = _out(self.payload)
        return out


@dataclass
class ErasureAcknowledgement:
    """An app's acknowledgement of the erasure of one of its users; the same answer for every acknowledge (OpenAPI ErasureAcknowledgement)."""

    SCHEMA: ClassVar[str] = "ErasureAcknowledgement"
    WIRE: ClassVar[Dict[str, str]] = {
        "open_user_id": "open_user_id",
        "erased_at": "erased_at",
        "acknowledged_at": "acknowledged_at",
    }
    REQUIRED: ClassVar[List[str]] = ["open_user_id", "erased_at", "acknowledged_at"]

    open_user_id: int
    erased_at: str
    acknowledged_at: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ErasureAcknowledgement:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            open_user_id=_v(d, "open_user_id"),
            erased_at=_v(d, "erased_at"),
            acknowledged_at=_v(d, "acknowledged_at"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["open_user_id"] = _out(self.open_user_id)
        out["erased_at"] = _out(self.erased_at)
        out["acknowledged_at"] = _out(self.acknowledged_at)
        return out


@dataclass
class AccessLogPage:
    """A page of the app's access log (`GET /open/v1/access-log`) (OpenAPI AccessLogPage)."""

    SCHEMA: ClassVar[str] = "AccessLogPage"
    WIRE: ClassVar[Dict[str, str]] = {
        "accesses": "accesses",
        "next_after": "next_after",
    }
    REQUIRED: ClassVar[List[str]] = ["accesses", "next_after"]

    accesses: List[AccessLogEntry]
    next_after: Optional[int]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AccessLogPage:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            accesses=_objs(AccessLogEntry, d.get("accesses")),
            next_after=_v(d, "next_after"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["accesses"] = _out(self.accesses)
        out["next_after"] = _out(self.next_after)
        return out


@dataclass
class AccessLogEntry:
    """One recorded access to the data of some of the app's users (OpenAPI AccessLogEntry)."""

    SCHEMA: ClassVar[str] = "AccessLogEntry"
    WIRE: ClassVar[Dict[str, str]] = {
        "seq": "seq",
        "at": "at",
        "action": "action",
        "accessor_role": "accessor_role",
        "accessor": "accessor",
        "reason": "reason",
        "open_user_ids": "open_user_ids",
        "report_id": "report_id",
    }
    REQUIRED: ClassVar[List[str]] = ["seq", "at", "action", "accessor_role", "accessor", "reason", "open_user_ids", "report_id"]

    seq: int
    at: str
    action: str
    accessor_role: str
    accessor: str
    reason: str
    open_user_ids: List[int]
    report_id: Optional[int]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AccessLogEntry:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            seq=_v(d, "seq"),
            at=_v(d, "at"),
            action=_v(d, "action"),
            accessor_role=_v(d, "accessor_role"),
            accessor=_v(d, "accessor"),
            reason=_v(d, "reason"),
            open_user_ids=_v(d, "open_user_ids"),
            report_id=_v(d, "report_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["seq"] = _out(self.seq)
        out["at"] = _out(self.at)
        out["action"] = _out(self.action)
        out["accessor_role"] = _out(self.accessor_role)
        out["accessor"] = _out(self.accessor)
        out["reason"] = _out(self.reason)
        out["open_user_ids"] = _out(self.open_user_ids)
        out["report_id"] = _out(self.report_id)
        return out


@dataclass
class HealthReport:
    """The full snapshot of a report, every field always present (null when not given) (OpenAPI HealthReport)."""

    SCHEMA: ClassVar[str] = "HealthReport"
    WIRE: ClassVar[Dict[str, str]] = {
        "id": "id",
        "app_id": "app_id",
        "open_user_id": "open_user_id",
        "open_member_id": "open_member_id",
        "request_report_id": "request_report_id",
        "measurement_no": "measurement_no",
        "device_sn": "device_sn",
        "report_type": "report_type",
        "file_path": "file_path",
        "interpretation_result": "interpretation_result",
        "interpretation_detail": "interpretation_detail",
        "interpretation_method": "interpretation_method",
        "is_viewed": "is_viewed",
        "uploaded_at": "uploaded_at",
        "examined_at": "examined_at",
        "interpreted_at": "interpreted_at",
        "meta": "meta",
        "raw_data": "raw_data",
    }
    REQUIRED: ClassVar[List[str]] = ["id", "app_id", "open_user_id", "open_member_id", "request_report_id", "measurement_no", "device_sn", "report_type", "file_path", "interpretation_result", "interpretation_detail", "interpretation_method", "is_viewed", "uploaded_at", "examined_at", "interpreted_at", "meta", "raw_data"]

    id: int
    app_id: int
    open_user_id: int
    open_member_id: Optional[int]
    request_report_id: Optional[str]
    measurement_no: Optional[str]
    device_sn: Optional[str]
    report_type: Optional[str]
    file_path: Optional[str]
    interpretation_result: Optional[str]
    interpretation_detail: Optional[Dict[str, Any]]
    interpretation_method: Optional[str]
    is_viewed: bool
    uploaded_at: str
    examined_at: Optional[str]
    interpreted_at: Optional[str]
    meta: HealthReportMeta
    raw_data: Optional[Dict[str, Any]]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HealthReport:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            id=_v(d, "id"),
            app_id=_v(d, "app_id"),
            open_user_id=_v(d, "open_user_id"),
            open_member_id=_v(d, "open_member_id"),
            request_report_id=_v(d, "request_report_id"),
            measurement_no=_v(d, "measurement_no"),
            device_sn=_v(d, "device_sn"),
            report_type=_v(d, "report_type"),
            file_path=_v(d, "file_path"),
            interpretation_result=_v(d, "interpretation_result"),
            interpretation_detail=_v(d, "interpretation_detail"),
            interpretation_method=_v(d, "interpretation_method"),
            is_viewed=_v(d, "is_viewed"),
            uploaded_at=_v(d, "uploaded_at"),
            examined_at=_v(d, "examined_at"),
            interpreted_at=_v(d, "interpreted_at"),
            meta=_obj(HealthReportMeta, d.get("meta")),
            raw_data=_v(d, "raw_data"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["id"] = _out(self.id)
        out["app_id"] = _out(self.app_id)
        out["open_user_id"] = _out(self.open_user_id)
        out["open_member_id"] = _out(self.open_member_id)
        out["request_report_id"] = _out(self.request_report_id)
        out["measurement_no"] = _out(self.measurement_no)
        out["device_sn"] = _out(self.device_sn)
        out["report_type"] = _out(self.report_type)
        out["file_path"] = _out(self.file_path)
        out["interpretation_result"] = _out(self.interpretation_result)
        out["interpretation_detail"] = _out(self.interpretation_detail)
        out["interpretation_method"] = _out(self.interpretation_method)
        out["is_viewed"] = _out(self.is_viewed)
        out["uploaded_at"] = _out(self.uploaded_at)
        out["examined_at"] = _out(self.examined_at)
        out["interpreted_at"] = _out(self.interpreted_at)
        out["meta"] = _out(self.meta)
        out["raw_data"] = _out(self.raw_data)
        return out


@dataclass
class HealthReportMeta:
    """The OpenAPI schema HealthReport.meta."""

    SCHEMA: ClassVar[str] = "HealthReport.meta"
    WIRE: ClassVar[Dict[str, str]] = {
        "points_code": "points_code",
        "data_source": "data_source",
        "operator_name": "operator_name",
        "operator_platform_user_id": "operator_platform_user_id",
    }
    REQUIRED: ClassVar[List[str]] = ["points_code", "data_source", "operator_name", "operator_platform_user_id"]

    points_code: Optional[str]
    data_source: Optional[str]
    operator_name: Optional[str]
    operator_platform_user_id: Optional[int]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HealthReportMeta:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            points_code=_v(d, "points_code"),
            data_source=_v(d, "data_source"),
            operator_name=_v(d, "operator_name"),
            operator_platform_user_id=_v(d, "operator_platform_user_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["points_code"] = _out(self.points_code)
        out["data_source"] = _out(self.data_source)
        out["operator_name"] = _out(self.operator_name)
        out["operator_platform_user_id"] = _out(self.operator_platform_user_id)
        return out


@dataclass
class DailyReport:
    """The OpenAPI schema DailyReport."""

    SCHEMA: ClassVar[str] = "DailyReport"
    WIRE: ClassVar[Dict[str, str]] = {
        "date": "date",
        "heart_rate": "heartRate",
        "spo2": "spo2",
        "ai_insight": "aiInsight",
    }
    REQUIRED: ClassVar[List[str]] = ["date", "heartRate", "spo2", "aiInsight"]

    date: str
    heart_rate: Optional[DailyReportHeartRate]
    spo2: Optional[DailyReportSpo2]
    ai_insight: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DailyReport:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            date=_v(d, "date"),
            heart_rate=_obj(DailyReportHeartRate, d.get("heartRate")),
            spo2=_obj(DailyReportSpo2, d.get("spo2")),
            ai_insight=_v(d, "aiInsight"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["date"] = _out(self.date)
        out["heartRate"] = _out(self.heart_rate)
        out["spo2"] = _out(self.spo2)
        out["aiInsight"] = _out(self.ai_insight)
        return out


@dataclass
class DailyReportHeartRate:
    """Average heart rate in bpm; null when the day has no heart-rate reading (OpenAPI DailyReport.heartRate)."""

    SCHEMA: ClassVar[str] = "DailyReport.heartRate"
    WIRE: ClassVar[Dict[str, str]] = {
        "avg": "avg",
        "unit": "unit",
    }
    REQUIRED: ClassVar[List[str]] = ["avg", "unit"]

    avg: float
    unit: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DailyReportHeartRate:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            avg=_v(d, "avg"),
            unit=_v(d, "unit"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["avg"] = _out(self.avg)
        out["unit"] = _out(self.unit)
        return out


@dataclass
class DailyReportSpo2:
    """Average blood oxygen in percent; null when the day has no SpO2 reading (OpenAPI DailyReport.spo2)."""

    SCHEMA: ClassVar[str] = "DailyReport.spo2"
    WIRE: ClassVar[Dict[str, str]] = {
        "avg": "avg",
        "unit": "unit",
    }
    REQUIRED: ClassVar[List[str]] = ["avg", "unit"]

    avg: float
    unit: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DailyReportSpo2:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            avg=_v(d, "avg"),
            unit=_v(d, "unit"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["avg"] = _out(self.avg)
        out["unit"] = _out(self.unit)
        return out


@dataclass
class MockMeasureRequest:
    """The OpenAPI schema MockMeasureRequest."""

    SCHEMA: ClassVar[str] = "MockMeasureRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "app_key": "appKey",
        "third_user_id": "thirdUserId",
        "device_key": "deviceKey",
        "measure_mode": "measureMode",
    }
    REQUIRED: ClassVar[List[str]] = ["appKey", "thirdUserId", "deviceKey", "measureMode"]

    app_key: str
    third_user_id: str
    device_key: str
    measure_mode: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MockMeasureRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            app_key=_v(d, "appKey"),
            third_user_id=_v(d, "thirdUserId"),
            device_key=_v(d, "deviceKey"),
            measure_mode=_v(d, "measureMode"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["appKey"] = _out(self.app_key)
        out["thirdUserId"] = _out(self.third_user_id)
        out["deviceKey"] = _out(self.device_key)
        out["measureMode"] = _out(self.measure_mode)
        return out


@dataclass
class Measurement:
    """The OpenAPI schema Measurement."""

    SCHEMA: ClassVar[str] = "Measurement"
    WIRE: ClassVar[Dict[str, str]] = {
        "measure_id": "measureId",
        "measurement_no": "measurement_no",
        "report_type": "report_type",
    }
    REQUIRED: ClassVar[List[str]] = ["measureId", "measurement_no", "report_type"]

    measure_id: str
    measurement_no: str
    report_type: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Measurement:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            measure_id=_v(d, "measureId"),
            measurement_no=_v(d, "measurement_no"),
            report_type=_v(d, "report_type"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["measureId"] = _out(self.measure_id)
        out["measurement_no"] = _out(self.measurement_no)
        out["report_type"] = _out(self.report_type)
        return out


@dataclass
class TokenRequest:
    """The OpenAPI schema TokenRequest."""

    SCHEMA: ClassVar[str] = "TokenRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "grant_type": "grant_type",
        "scope": "scope",
        "client_id": "client_id",
        "client_secret": "client_secret",
    }
    REQUIRED: ClassVar[List[str]] = ["grant_type"]

    grant_type: str
    scope: Optional[str] = None
    client_id: Optional[str] = None
    client_secret: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TokenRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            grant_type=_v(d, "grant_type"),
            scope=_v(d, "scope"),
            client_id=_v(d, "client_id"),
            client_secret=_v(d, "client_secret"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["grant_type"] = _out(self.grant_type)
        if self.scope is not None:
            out["scope"] = _out(self.scope)
        if self.client_id is not None:
            out["client_id"] = _out(self.client_id)
        if self.client_secret is not None:
            out["client_secret"] = _out(self.client_secret)
        return out


@dataclass
class TokenResponse:
    """The OpenAPI schema TokenResponse."""

    SCHEMA: ClassVar[str] = "TokenResponse"
    WIRE: ClassVar[Dict[str, str]] = {
        "access_token": "access_token",
        "token_type": "token_type",
        "expires_in": "expires_in",
        "scope": "scope",
    }
    REQUIRED: ClassVar[List[str]] = ["access_token", "token_type", "expires_in", "scope"]

    access_token: str
    token_type: str
    expires_in: int
    scope: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TokenResponse:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            access_token=_v(d, "access_token"),
            token_type=_v(d, "token_type"),
            expires_in=_v(d, "expires_in"),
            scope=_v(d, "scope"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["access_token"] = _out(self.access_token)
        out["token_type"] = _out(self.token_type)
        out["expires_in"] = _out(self.expires_in)
        out["scope"] = _out(self.scope)
        return out


@dataclass
class RevokeRequest:
    """The OpenAPI schema RevokeRequest."""

    SCHEMA: ClassVar[str] = "RevokeRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "token": "token",
        "token_type_hint": "token_type_hint",
        "client_id": "client_id",
        "client_secret": "client_secret",
    }
    REQUIRED: ClassVar[List[str]] = ["token"]

    token: str
    token_type_hint: Optional[str] = None
    client_id: Optional[str] = None
    client_secret: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RevokeRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            token=_v(d, "token"),
            token_type_hint=_v(d, "token_type_hint"),
            client_id=_v(d, "client_id"),
            client_secret=_v(d, "client_secret"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["token"] = _out(self.token)
        if self.token_type_hint is not None:
            out["token_type_hint"] = _out(self.token_type_hint)
        if self.client_id is not None:
            out["client_id"] = _out(self.client_id)
        if self.client_secret is not None:
            out["client_secret"] = _out(self.client_secret)
        return out


@dataclass
class OrderCreateRequest:
    """The OpenAPI schema OrderCreateRequest."""

    SCHEMA: ClassVar[str] = "OrderCreateRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "third_order_id": "third_order_id",
        "contact_person": "contact_person",
        "contact_phone": "contact_phone",
        "address": "address",
        "items": "items",
        "user_id": "user_id",
        "area_code": "area_code",
        "area_text": "area_text",
        "logistics_type": "logistics_type",
        "postage_policy": "postage_policy",
    }
    REQUIRED: ClassVar[List[str]] = ["third_order_id", "contact_person", "contact_phone", "address", "items"]

    third_order_id: str
    contact_person: str
    contact_phone: str
    address: str
    items: List[OrderItemInput]
    user_id: Optional[int] = None
    area_code: Optional[str] = None
    area_text: Optional[str] = None
    logistics_type: Optional[str] = None
    postage_policy: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OrderCreateRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            third_order_id=_v(d, "third_order_id"),
            contact_person=_v(d, "contact_person"),
            contact_phone=_v(d, "contact_phone"),
            address=_v(d, "address"),
            items=_objs(OrderItemInput, d.get("items")),
            user_id=_v(d, "user_id"),
            area_code=_v(d, "area_code"),
            area_text=_v(d, "area_text"),
            logistics_type=_v(d, "logistics_type"),
            postage_policy=_v(d, "postage_policy"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["third_order_id"] = _out(self.third_order_id)
        out["contact_person"] = _out(self.contact_person)
        out["contact_phone"] = _out(self.contact_phone)
        out["address"] = _out(self.address)
        out["items"] = _out(self.items)
        if self.user_id is not None:
            out["user_id"] = _out(self.user_id)
        if self.area_code is not None:
            out["area_code"] = _out(self.area_code)
        if self.area_text is not None:
            out["area_text"] = _out(self.area_text)
        if self.logistics_type is not None:
            out["logistics_type"] = _out(self.logistics_type)
        if self.postage_policy is not None:
            out["postage_policy"] = _out(self.postage_policy)
        return out


@dataclass
class OrderItemInput:
    """The OpenAPI schema OrderItemInput."""

    SCHEMA: ClassVar[str] = "OrderItemInput"
    WIRE: ClassVar[Dict[str, str]] = {
        "goods_code": "goods_code",
        "quantity": "quantity",
        "unit_price": "unit_price",
    }
    REQUIRED: ClassVar[List[str]] = ["goods_code", "quantity", "unit_price"]

    goods_code: str
    quantity: int
    unit_price: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OrderItemInput:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            goods_code=_v(d, "goods_code"),
            quantity=_v(d, "quantity"),
            unit_price=_v(d, "unit_price"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["goods_code"] = _out(self.goods_code)
        out["quantity"] = _out(self.quantity)
        out["unit_price"] = _out(self.unit_price)
        return out


@dataclass
class OrderCreateResult:
    """The OpenAPI schema OrderCreateResult."""

    SCHEMA: ClassVar[str] = "OrderCreateResult"
    WIRE: ClassVar[Dict[str, str]] = {
        "id": "id",
        "order_code": "order_code",
        "order_time": "order_time",
        "created": "created",
    }
    REQUIRED: ClassVar[List[str]] = ["id", "order_code", "order_time", "created"]

    id: int
    order_code: str
    order_time: str
    created: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OrderCreateResult:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            id=_v(d, "id"),
            order_code=_v(d, "order_code"),
            order_time=_v(d, "order_time"),
            created=_v(d, "created"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["id"] = _out(self.id)
        out["order_code"] = _out(self.order_code)
        out["order_time"] = _out(self.order_time)
        out["created"] = _out(self.created)
        return out


@dataclass
class Order:
    """A purchase order: the spec's detail fields plus the shipment (`logistics_company`, `tracking_number`, `shipped_at`), `reject_reason` and each item's `device_sns` (OpenAPI Order)."""

    SCHEMA: ClassVar[str] = "Order"
    WIRE: ClassVar[Dict[str, str]] = {
        "order_code": "order_code",
        "order_time": "order_time",
        "order_status": "order_status",
        "order_source": "order_source",
        "cooperation_type": "cooperation_type",
        "user_id": "user_id",
        "third_order_id": "third_order_id",
        "contact_person": "contact_person",
        "contact_phone": "contact_phone",
        "address": "address",
        "logistics_type": "logistics_type",
        "postage_policy": "postage_policy",
        "area_code": "area_code",
        "area_text": "area_text",
        "postage_amount": "postage_amount",
        "items": "items",
        "created_at": "created_at",
        "updated_at": "updated_at",
        "logistics_company": "logistics_company",
        "tracking_number": "tracking_number",
        "shipped_at": "shipped_at",
        "reject_reason": "reject_reason",
    }
    REQUIRED: ClassVar[List[str]] = ["order_code", "order_time", "order_status", "order_source", "cooperation_type", "user_id", "third_order_id", "contact_person", "contact_phone", "address", "logistics_type", "postage_policy", "area_code", "area_text", "postage_amount", "items", "created_at", "updated_at", "logistics_company", "tracking_number", "shipped_at", "reject_reason"]

    order_code: str
    order_time: str
    order_status: str
    order_source: str
    cooperation_type: str
    user_id: Optional[int]
    third_order_id: str
    contact_person: str
    contact_phone: str
    address: str
    logistics_type: str
    postage_policy: str
    area_code: Optional[str]
    area_text: Optional[str]
    postage_amount: int
    items: List[OrderItem]
    created_at: str
    updated_at: str
    logistics_company: Optional[str]
    tracking_number: Optional[str]
    shipped_at: Optional[str]
    reject_reason: Optional[str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Order:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            order_code=_v(d, "order_code"),
            order_time=_v(d, "order_time"),
            order_status=_v(d, "order_status"),
            order_source=_v(d, "order_source"),
            cooperation_type=_v(d, "cooperation_type"),
            user_id=_v(d, "user_id"),
            third_order_id=_v(d, "third_order_id"),
            contact_person=_v(d, "contact_person"),
            contact_phone=_v(d, "contact_phone"),
            address=_v(d, "address"),
            logistics_type=_v(d, "logistics_type"),
            postage_policy=_v(d, "postage_policy"),
            area_code=_v(d, "area_code"),
            area_text=_v(d, "area_text"),
            postage_amount=_v(d, "postage_amount"),
            items=_objs(OrderItem, d.get("items")),
            created_at=_v(d, "created_at"),
            updated_at=_v(d, "updated_at"),
            logistics_company=_v(d, "logistics_company"),
            tracking_number=_v(d, "tracking_number"),
            shipped_at=_v(d, "shipped_at"),
            reject_reason=_v(d, "reject_reason"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["order_code"] = _out(self.order_code)
        out["order_time"] = _out(self.order_time)
        out["order_status"] = _out(self.order_status)
        out["order_source"] = _out(self.order_source)
        out["cooperation_type"] = _out(self.cooperation_type)
        out["user_id"] = _out(self.user_id)
        out["third_order_id"] = _out(self.third_order_id)
        out["contact_person"] = _out(self.contact_person)
        out["contact_phone"] = _out(self.contact_phone)
        out["address"] = _out(self.address)
        out["logistics_type"] = _out(self.logistics_type)
        out["postage_policy"] = _out(self.postage_policy)
        out["area_code"] = _out(self.area_code)
        out["area_text"] = _out(self.area_text)
        out["postage_amount"] = _out(self.postage_amount)
        out["items"] = _out(self.items)
        out["created_at"] = _out(self.created_at)
        out["updated_at"] = _out(self.updated_at)
        out["logistics_company"] = _out(self.logistics_company)
        out["tracking_number"] = _out(self.tracking_number)
        out["shipped_at"] = _out(self.shipped_at)
        out["reject_reason"] = _out(self.reject_reason)
        return out


@dataclass
class OrderItem:
    """The OpenAPI schema OrderItem."""

    SCHEMA: ClassVar[str] = "OrderItem"
    WIRE: ClassVar[Dict[str, str]] = {
        "id": "id",
        "goods_id": "goods_id",
        "goods_code": "goods_code",
        "goods_name": "goods_name",
        "quantity": "quantity",
        "unit_price": "unit_price",
        "total_price": "total_price",
        "shipping_status": "shipping_status",
        "device_sns": "device_sns",
    }
    REQUIRED: ClassVar[List[str]] = ["id", "goods_id", "goods_code", "goods_name", "quantity", "unit_price", "total_price", "shipping_status", "device_sns"]

    id: int
    goods_id: int
    goods_code: str
    goods_name: str
    quantity: int
    unit_price: int
    total_price: int
    shipping_status: str
    device_sns: List[str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OrderItem:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            id=_v(d, "id"),
            goods_id=_v(d, "goods_id"),
            goods_code=_v(d, "goods_code"),
            goods_name=_v(d, "goods_name"),
            quantity=_v(d, "quantity"),
            unit_price=_v(d, "unit_price"),
            total_price=_v(d, "total_price"),
            shipping_status=_v(d, "shipping_status"),
            device_sns=_v(d, "device_sns"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["id"] = _out(self.id)
        out["goods_id"] = _out(self.goods_id)
        out["goods_code"] = _out(self.goods_code)
        out["goods_name"] = _out(self.goods_name)
        out["quantity"] = _out(self.quantity)
        out["unit_price"] = _out(self.unit_price)
        out["total_price"] = _out(self.total_price)
        out["shipping_status"] = _out(self.shipping_status)
        out["device_sns"] = _out(self.device_sns)
        return out


@dataclass
class SandboxShipmentRequest:
    """The OpenAPI schema SandboxShipmentRequest."""

    SCHEMA: ClassVar[str] = "SandboxShipmentRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "order_code": "order_code",
    }
    REQUIRED: ClassVar[List[str]] = ["order_code"]

    order_code: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SandboxShipmentRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            order_code=_v(d, "order_code"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["order_code"] = _out(self.order_code)
        return out


@dataclass
class ShipmentResult:
    """The OpenAPI schema ShipmentResult."""

    SCHEMA: ClassVar[str] = "ShipmentResult"
    WIRE: ClassVar[Dict[str, str]] = {
        "order_code": "order_code",
        "shipped": "shipped",
    }
    REQUIRED: ClassVar[List[str]] = ["order_code", "shipped"]

    order_code: str
    shipped: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ShipmentResult:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            order_code=_v(d, "order_code"),
            shipped=_v(d, "shipped"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["order_code"] = _out(self.order_code)
        out["shipped"] = _out(self.shipped)
        return out


@dataclass
class SandboxEventRequest:
    """The OpenAPI schema SandboxEventRequest."""

    SCHEMA: ClassVar[str] = "SandboxEventRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
    }
    REQUIRED: ClassVar[List[str]] = ["event"]

    event: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SandboxEventRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        return out


@dataclass
class SandboxEventTriggered:
    """The OpenAPI schema SandboxEventTriggered."""

    SCHEMA: ClassVar[str] = "SandboxEventTriggered"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "queued": "queued",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "queued"]

    event: str
    queued: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SandboxEventTriggered:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            queued=_v(d, "queued"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["queued"] = _out(self.queued)
        return out


@dataclass
class ProviderRegistration:
    """The OpenAPI schema ProviderRegistration."""

    SCHEMA: ClassVar[str] = "ProviderRegistration"
    WIRE: ClassVar[Dict[str, str]] = {
        "name": "name",
        "type": "type",
        "contact": "contact",
        "points_code": "points_code",
    }
    REQUIRED: ClassVar[List[str]] = ["name", "type", "contact"]

    name: str
    type: str
    contact: str
    points_code: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProviderRegistration:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            name=_v(d, "name"),
            type=_v(d, "type"),
            contact=_v(d, "contact"),
            points_code=_v(d, "points_code"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["name"] = _out(self.name)
        out["type"] = _out(self.type)
        out["contact"] = _out(self.contact)
        if self.points_code is not None:
            out["points_code"] = _out(self.points_code)
        return out


@dataclass
class ProviderRegistered:
    """The OpenAPI schema ProviderRegistered."""

    SCHEMA: ClassVar[str] = "ProviderRegistered"
    WIRE: ClassVar[Dict[str, str]] = {
        "provider_id": "provider_id",
        "status": "status",
    }
    REQUIRED: ClassVar[List[str]] = ["provider_id", "status"]

    provider_id: int
    status: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProviderRegistered:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            provider_id=_v(d, "provider_id"),
            status=_v(d, "status"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["provider_id"] = _out(self.provider_id)
        out["status"] = _out(self.status)
        return out


@dataclass
class BatchIssueRequest:
    """The OpenAPI schema BatchIssueRequest."""

    SCHEMA: ClassVar[str] = "BatchIssueRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "cards": "cards",
        "batch_id": "batch_id",
    }
    REQUIRED: ClassVar[List[str]] = ["cards"]

    cards: List[CardInput]
    batch_id: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BatchIssueRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            cards=_objs(CardInput, d.get("cards")),
            batch_id=_v(d, "batch_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["cards"] = _out(self.cards)
        if self.batch_id is not None:
            out["batch_id"] = _out(self.batch_id)
        return out


@dataclass
class CardInput:
    """The OpenAPI schema CardInput."""

    SCHEMA: ClassVar[str] = "CardInput"
    WIRE: ClassVar[Dict[str, str]] = {
        "holder_name": "holder_name",
        "expires_at": "expires_at",
        "items": "items",
        "card_number": "card_number",
        "holder_phone": "holder_phone",
    }
    REQUIRED: ClassVar[List[str]] = ["holder_name", "expires_at", "items"]

    holder_name: str
    expires_at: str
    items: List[CardItemInput]
    card_number: Optional[str] = None
    holder_phone: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CardInput:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            holder_name=_v(d, "holder_name"),
            expires_at=_v(d, "expires_at"),
            items=_objs(CardItemInput, d.get("items")),
            card_number=_v(d, "card_number"),
            holder_phone=_v(d, "holder_phone"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["holder_name"] = _out(self.holder_name)
        out["expires_at"] = _out(self.expires_at)
        out["items"] = _out(self.items)
        if self.card_number is not None:
            out["card_number"] = _out(self.card_number)
        if self.holder_phone is not None:
            out["holder_phone"] = _out(self.holder_phone)
        return out


@dataclass
class CardItemInput:
    """The OpenAPI schema CardItemInput."""

    SCHEMA: ClassVar[str] = "CardItemInput"
    WIRE: ClassVar[Dict[str, str]] = {
        "benefit_item_id": "benefit_item_id",
        "quantity": "quantity",
    }
    REQUIRED: ClassVar[List[str]] = ["benefit_item_id", "quantity"]

    benefit_item_id: int
    quantity: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CardItemInput:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            benefit_item_id=_v(d, "benefit_item_id"),
            quantity=_v(d, "quantity"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["benefit_item_id"] = _out(self.benefit_item_id)
        out["quantity"] = _out(self.quantity)
        return out


@dataclass
class IssuedCards:
    """The OpenAPI schema IssuedCards."""

    SCHEMA: ClassVar[str] = "IssuedCards"
    WIRE: ClassVar[Dict[str, str]] = {
        "cards": "cards",
    }
    REQUIRED: ClassVar[List[str]] = ["cards"]

    cards: List[IssuedCardsCardsItem]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> IssuedCards:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            cards=_objs(IssuedCardsCardsItem, d.get("cards")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["cards"] = _out(self.cards)
        return out


@dataclass
class IssuedCardsCardsItem:
    """The OpenAPI schema IssuedCards.cards[]."""

    SCHEMA: ClassVar[str] = "IssuedCards.cards[]"
    WIRE: ClassVar[Dict[str, str]] = {
        "card_number": "card_number",
        "items": "items",
    }
    REQUIRED: ClassVar[List[str]] = ["card_number", "items"]

    card_number: str
    items: List[IssuedCardsCardsItemItemsItem]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> IssuedCardsCardsItem:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            card_number=_v(d, "card_number"),
            items=_objs(IssuedCardsCardsItemItemsItem, d.get("items")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["card_number"] = _out(self.card_number)
        out["items"] = _out(self.items)
        return out


@dataclass
class IssuedCardsCardsItemItemsItem:
    """The OpenAPI schema IssuedCards.cards[].items[]."""

    SCHEMA: ClassVar[str] = "IssuedCards.cards[].items[]"
    WIRE: ClassVar[Dict[str, str]] = {
        "user_benefit_item_id": "user_benefit_item_id",
        "benefit_item_id": "benefit_item_id",
        "quantity": "quantity",
    }
    REQUIRED: ClassVar[List[str]] = ["user_benefit_item_id", "benefit_item_id", "quantity"]

    user_benefit_item_id: int
    benefit_item_id: int
    quantity: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> IssuedCardsCardsItemItemsItem:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            user_benefit_item_id=_v(d, "user_benefit_item_id"),
            benefit_item_id=_v(d, "benefit_item_id"),
            quantity=_v(d, "quantity"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["user_benefit_item_id"] = _out(self.user_benefit_item_id)
        out["benefit_item_id"] = _out(self.benefit_item_id)
        out["quantity"] = _out(self.quantity)
        return out


@dataclass
class VerifyUseRequest:
    """Send exactly one of `user_benefit_item_id` and `benefit_item_id` (OpenAPI VerifyUseRequest)."""

    SCHEMA: ClassVar[str] = "VerifyUseRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "card_number": "card_number",
        "user_benefit_item_id": "user_benefit_item_id",
        "benefit_item_id": "benefit_item_id",
        "quantity": "quantity",
        "points_code": "points_code",
        "service_provider_id": "service_provider_id",
        "remark": "remark",
    }
    REQUIRED: ClassVar[List[str]] = ["card_number"]

    card_number: str
    user_benefit_item_id: Optional[int] = None
    benefit_item_id: Optional[int] = None
    quantity: Optional[int] = None
    points_code: Optional[str] = None
    service_provider_id: Optional[int] = None
    remark: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VerifyUseRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            card_number=_v(d, "card_number"),
            user_benefit_item_id=_v(d, "user_benefit_item_id"),
            benefit_item_id=_v(d, "benefit_item_id"),
            quantity=_v(d, "quantity"),
            points_code=_v(d, "points_code"),
            service_provider_id=_v(d, "service_provider_id"),
            remark=_v(d, "remark"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["card_number"] = _out(self.card_number)
        if self.user_benefit_item_id is not None:
            out["user_benefit_item_id"] = _out(self.user_benefit_item_id)
        if self.benefit_item_id is not None:
            out["benefit_item_id"] = _out(self.benefit_item_id)
        if self.quantity is not None:
            out["quantity"] = _out(self.quantity)
        if self.points_code is not None:
            out["points_code"] = _out(self.points_code)
        if self.service_provider_id is not None:
            out["service_provider_id"] = _out(self.service_provider_id)
        if self.remark is not None:
            out["remark"] = _out(self.remark)
        return out


@dataclass
class VerifyUseResult:
    """The OpenAPI schema VerifyUseResult."""

    SCHEMA: ClassVar[str] = "VerifyUseResult"
    WIRE: ClassVar[Dict[str, str]] = {
        "fulfillment_record_id": "fulfillment_record_id",
        "card_number_masked": "card_number_masked",
        "benefit_item_name": "benefit_item_name",
        "quantity_used": "quantity_used",
        "remaining_quantity": "remaining_quantity",
        "user_info": "user_info",
        "verified_at": "verified_at",
    }
    REQUIRED: ClassVar[List[str]] = ["fulfillment_record_id", "card_number_masked", "benefit_item_name", "quantity_used", "remaining_quantity", "user_info", "verified_at"]

    fulfillment_record_id: int
    card_number_masked: str
    benefit_item_name: str
    quantity_used: int
    remaining_quantity: int
    user_info: VerifyUseResultUserInfo
    verified_at: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VerifyUseResult:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            fulfillment_record_id=_v(d, "fulfillment_record_id"),
            card_number_masked=_v(d, "card_number_masked"),
            benefit_item_name=_v(d, "benefit_item_name"),
            quantity_used=_v(d, "quantity_used"),
            remaining_quantity=_v(d, "remaining_quantity"),
            user_info=_obj(VerifyUseResultUserInfo, d.get("user_info")),
            verified_at=_v(d, "verified_at"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["fulfillment_record_id"] = _out(self.fulfillment_record_id)
        out["card_number_masked"] = _out(self.card_number_masked)
        out["benefit_item_name"] = _out(self.benefit_item_name)
        out["quantity_used"] = _out(self.quantity_used)
        out["remaining_quantity"] = _out(self.remaining_quantity)
        out["user_info"] = _out(self.user_info)
        out["verified_at"] = _out(self.verified_at)
        return out


@dataclass
class VerifyUseResultUserInfo:
    """The OpenAPI schema VerifyUseResult.user_info."""

    SCHEMA: ClassVar[str] = "VerifyUseResult.user_info"
    WIRE: ClassVar[Dict[str, str]] = {
        "name_masked": "name_masked",
        "phone_masked": "phone_masked",
    }
    REQUIRED: ClassVar[List[str]] = ["name_masked", "phone_masked"]

    name_masked: str
    phone_masked: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VerifyUseResultUserInfo:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            name_masked=_v(d, "name_masked"),
            phone_masked=_v(d, "phone_masked"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["name_masked"] = _out(self.name_masked)
        out["phone_masked"] = _out(self.phone_masked)
        return out


@dataclass
class Card:
    """The OpenAPI schema Card."""

    SCHEMA: ClassVar[str] = "Card"
    WIRE: ClassVar[Dict[str, str]] = {
        "card_number": "card_number",
        "issuer_app_id": "issuer_app_id",
        "holder_name": "holder_name",
        "holder_phone": "holder_phone",
        "expires_at": "expires_at",
        "items": "items",
    }
    REQUIRED: ClassVar[List[str]] = ["card_number", "issuer_app_id", "holder_name", "holder_phone", "expires_at", "items"]

    card_number: str
    issuer_app_id: int
    holder_name: str
    holder_phone: Optional[str]
    expires_at: str
    items: List[CardItemsItem]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Card:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            card_number=_v(d, "card_number"),
            issuer_app_id=_v(d, "issuer_app_id"),
            holder_name=_v(d, "holder_name"),
            holder_phone=_v(d, "holder_phone"),
            expires_at=_v(d, "expires_at"),
            items=_objs(CardItemsItem, d.get("items")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["card_number"] = _out(self.card_number)
        out["issuer_app_id"] = _out(self.issuer_app_id)
        out["holder_name"] = _out(self.holder_name)
        out["holder_phone"] = _out(self.holder_phone)
        out["expires_at"] = _out(self.expires_at)
        out["items"] = _out(self.items)
        return out


@dataclass
class CardItemsItem:
    """The OpenAPI schema Card.items[]."""

    SCHEMA: ClassVar[str] = "Card.items[]"
    WIRE: ClassVar[Dict[str, str]] = {
        "user_benefit_item_id": "user_benefit_item_id",
        "benefit_item_id": "benefit_item_id",
        "total_quantity": "total_quantity",
        "remaining_quantity": "remaining_quantity",
    }
    REQUIRED: ClassVar[List[str]] = ["user_benefit_item_id", "benefit_item_id", "total_quantity", "remaining_quantity"]

    user_benefit_item_id: int
    benefit_item_id: int
    total_quantity: int
    remaining_quantity: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CardItemsItem:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            user_benefit_item_id=_v(d, "user_benefit_item_id"),
            benefit_item_id=_v(d, "benefit_item_id"),
            total_quantity=_v(d, "total_quantity"),
            remaining_quantity=_v(d, "remaining_quantity"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["user_benefit_item_id"] = _out(self.user_benefit_item_id)
        out["benefit_item_id"] = _out(self.benefit_item_id)
        out["total_quantity"] = _out(self.total_quantity)
        out["remaining_quantity"] = _out(self.remaining_quantity)
        return out


@dataclass
class FulfillmentList:
    """The OpenAPI schema FulfillmentList."""

    SCHEMA: ClassVar[str] = "FulfillmentList"
    WIRE: ClassVar[Dict[str, str]] = {
        "fulfillments": "fulfillments",
    }
    REQUIRED: ClassVar[List[str]] = ["fulfillments"]

    fulfillments: List[Fulfillment]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FulfillmentList:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            fulfillments=_objs(Fulfillment, d.get("fulfillments")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["fulfillments"] = _out(self.fulfillments)
        return out


@dataclass
class Fulfillment:
    """A benefit fulfillment record (OpenAPI Fulfillment)."""

    SCHEMA: ClassVar[str] = "Fulfillment"
    WIRE: ClassVar[Dict[str, str]] = {
        "fulfillment_record_id": "fulfillment_record_id",
        "card_number": "card_number",
        "benefit_item_name": "benefit_item_name",
        "current_usage_quantity": "current_usage_quantity",
        "status": "status",
        "points_code": "points_code",
        "initiated_at": "initiated_at",
        "rating": "rating",
        "service_provider_id": "service_provider_id",
        "remark": "remark",
    }
    REQUIRED: ClassVar[List[str]] = ["fulfillment_record_id", "card_number", "benefit_item_name", "current_usage_quantity", "status", "points_code", "initiated_at", "rating", "service_provider_id", "remark"]

    fulfillment_record_id: int
    card_number: str
    benefit_item_name: str
    current_usage_quantity: int
    status: str
    points_code: Optional[str]
    initiated_at: str
    rating: Optional[int]
    service_provider_id: int
    remark: Optional[str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Fulfillment:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            fulfillment_record_id=_v(d, "fulfillment_record_id"),
            card_number=_v(d, "card_number"),
            benefit_item_name=_v(d, "benefit_item_name"),
            current_usage_quantity=_v(d, "current_usage_quantity"),
            status=_v(d, "status"),
            points_code=_v(d, "points_code"),
            initiated_at=_v(d, "initiated_at"),
            rating=_v(d, "rating"),
            service_provider_id=_v(d, "service_provider_id"),
            remark=_v(d, "remark"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["fulfillment_record_id"] = _out(self.fulfillment_record_id)
        out["card_number"] = _out(self.card_number)
        out["benefit_item_name"] = _out(self.benefit_item_name)
        out["current_usage_quantity"] = _out(self.current_usage_quantity)
        out["status"] = _out(self.status)
        out["points_code"] = _out(self.points_code)
        out["initiated_at"] = _out(self.initiated_at)
        out["rating"] = _out(self.rating)
        out["service_provider_id"] = _out(self.service_provider_id)
        out["remark"] = _out(self.remark)
        return out


@dataclass
class RatingRequest:
    """The OpenAPI schema RatingRequest."""

    SCHEMA: ClassVar[str] = "RatingRequest"
    WIRE: ClassVar[Dict[str, str]] = {
        "rating": "rating",
    }
    REQUIRED: ClassVar[List[str]] = ["rating"]

    rating: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RatingRequest:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            rating=_v(d, "rating"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["rating"] = _out(self.rating)
        return out


@dataclass
class RatingResult:
    """The OpenAPI schema RatingResult."""

    SCHEMA: ClassVar[str] = "RatingResult"
    WIRE: ClassVar[Dict[str, str]] = {
        "fulfillment_record_id": "fulfillment_record_id",
        "rating": "rating",
    }
    REQUIRED: ClassVar[List[str]] = ["fulfillment_record_id", "rating"]

    fulfillment_record_id: int
    rating: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RatingResult:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            fulfillment_record_id=_v(d, "fulfillment_record_id"),
            rating=_v(d, "rating"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["fulfillment_record_id"] = _out(self.fulfillment_record_id)
        out["rating"] = _out(self.rating)
        return out


@dataclass
class UserProfileUpdatedEvent:
    """Webhook body of the event user.profile.updated (OpenAPI x-webhooks/user.profile.updated)."""

    SCHEMA: ClassVar[str] = "x-webhooks/user.profile.updated"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "occurred_at": "occurred_at",
        "data": "data",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "open_user_id", "channel_user_id", "occurred_at", "data"]

    event: str
    delivery_id: str
    app_id: int
    open_user_id: int
    channel_user_id: str
    occurred_at: str
    data: UserProfileUpdatedData

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserProfileUpdatedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            occurred_at=_v(d, "occurred_at"),
            data=_obj(UserProfileUpdatedData, d.get("data")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["occurred_at"] = _out(self.occurred_at)
        out["data"] = _out(self.data)
        return out


@dataclass
class UserProfileUpdatedData:
    """`data` of user.profile.updated: which profile fields changed (at least one) (OpenAPI UserProfileUpdatedData)."""

    SCHEMA: ClassVar[str] = "UserProfileUpdatedData"
    WIRE: ClassVar[Dict[str, str]] = {
        "changed_fields": "changed_fields",
    }
    REQUIRED: ClassVar[List[str]] = ["changed_fields"]

    changed_fields: List[str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserProfileUpdatedData:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            changed_fields=_v(d, "changed_fields"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["changed_fields"] = _out(self.changed_fields)
        return out


@dataclass
class UserFamilyGroupCreatedEvent:
    """Webhook body of the event user.family_group.created (OpenAPI x-webhooks/user.family_group.created)."""

    SCHEMA: ClassVar[str] = "x-webhooks/user.family_group.created"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "occurred_at": "occurred_at",
        "data": "data",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "open_user_id", "channel_user_id", "occurred_at", "data"]

    event: str
    delivery_id: str
    app_id: int
    open_user_id: int
    channel_user_id: str
    occurred_at: str
    data: FamilyGroupCreatedData

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserFamilyGroupCreatedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            occurred_at=_v(d, "occurred_at"),
            data=_obj(FamilyGroupCreatedData, d.get("data")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["occurred_at"] = _out(self.occurred_at)
        out["data"] = _out(self.data)
        return out


@dataclass
class FamilyGroupCreatedData:
    """`data` of user.family_group.created, sent when a group is created (`created=true`) and also when an existing group is renamed through the upsert (`created=false`) (OpenAPI FamilyGroupCreatedData)."""

    SCHEMA: ClassVar[str] = "FamilyGroupCreatedData"
    WIRE: ClassVar[Dict[str, str]] = {
        "family_group_id": "family_group_id",
        "app_group_id": "app_group_id",
        "name": "name",
        "created": "created",
    }
    REQUIRED: ClassVar[List[str]] = ["family_group_id", "app_group_id", "name", "created"]

    family_group_id: int
    app_group_id: int
    name: str
    created: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyGroupCreatedData:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            family_group_id=_v(d, "family_group_id"),
            app_group_id=_v(d, "app_group_id"),
            name=_v(d, "name"),
            created=_v(d, "created"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["family_group_id"] = _out(self.family_group_id)
        out["app_group_id"] = _out(self.app_group_id)
        out["name"] = _out(self.name)
        out["created"] = _out(self.created)
        return out


@dataclass
class UserFamilyGroupDeletedEvent:
    """Webhook body of the event user.family_group.deleted (OpenAPI x-webhooks/user.family_group.deleted)."""

    SCHEMA: ClassVar[str] = "x-webhooks/user.family_group.deleted"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "occurred_at": "occurred_at",
        "data": "data",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "open_user_id", "channel_user_id", "occurred_at", "data"]

    event: str
    delivery_id: str
    app_id: int
    open_user_id: int
    channel_user_id: str
    occurred_at: str
    data: FamilyGroupDeletedData

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserFamilyGroupDeletedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            occurred_at=_v(d, "occurred_at"),
            data=_obj(FamilyGroupDeletedData, d.get("data")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["occurred_at"] = _out(self.occurred_at)
        out["data"] = _out(self.data)
        return out


@dataclass
class FamilyGroupDeletedData:
    """`data` of user.family_group.deleted: the dissolved group and the members deleted with it (OpenAPI FamilyGroupDeletedData)."""

    SCHEMA: ClassVar[str] = "FamilyGroupDeletedData"
    WIRE: ClassVar[Dict[str, str]] = {
        "family_group_id": "family_group_id",
        "app_group_id": "app_group_id",
        "deleted_member_ids": "deleted_member_ids",
    }
    REQUIRED: ClassVar[List[str]] = ["family_group_id", "app_group_id", "deleted_member_ids"]

    family_group_id: int
    app_group_id: int
    deleted_member_ids: List[int]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyGroupDeletedData:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            family_group_id=_v(d, "family_group_id"),
            app_group_id=_v(d, "app_group_id"),
            deleted_member_ids=_v(d, "deleted_member_ids"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["family_group_id"] = _out(self.family_group_id)
        out["app_group_id"] = _out(self.app_group_id)
        out["deleted_member_ids"] = _out(self.deleted_member_ids)
        return out


@dataclass
class UserFamilyMemberCreatedEvent:
    """Webhook body of the event user.family_member.created (OpenAPI x-webhooks/user.family_member.created)."""

    SCHEMA: ClassVar[str] = "x-webhooks/user.family_member.created"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "occurred_at": "occurred_at",
        "data": "data",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "open_user_id", "channel_user_id", "occurred_at", "data"]

    event: str
    delivery_id: str
    app_id: int
    open_user_id: int
    channel_user_id: str
    occurred_at: str
    data: FamilyMemberCreatedData

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserFamilyMemberCreatedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            occurred_at=_v(d, "occurred_at"),
            data=_obj(FamilyMemberCreatedData, d.get("data")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["occurred_at"] = _out(self.occurred_at)
        out["data"] = _out(self.data)
        return out


@dataclass
class FamilyMemberCreatedData:
    """`data` of user.family_member.created (OpenAPI FamilyMemberCreatedData)."""

    SCHEMA: ClassVar[str] = "FamilyMemberCreatedData"
    WIRE: ClassVar[Dict[str, str]] = {
        "member_id": "member_id",
        "app_user_id": "app_user_id",
        "family_group_id": "family_group_id",
        "app_group_id": "app_group_id",
    }
    REQUIRED: ClassVar[List[str]] = ["member_id", "app_user_id", "family_group_id", "app_group_id"]

    member_id: int
    app_user_id: str
    family_group_id: int
    app_group_id: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyMemberCreatedData:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            member_id=_v(d, "member_id"),
            app_user_id=_v(d, "app_user_id"),
            family_group_id=_v(d, "family_group_id"),
            app_group_id=_v(d, "app_group_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["member_id"] = _out(self.member_id)
        out["app_user_id"] = _out(self.app_user_id)
        out["family_group_id"] = _out(self.family_group_id)
        out["app_group_id"] = _out(self.app_group_id)
        return out


@dataclass
class UserFamilyMemberUpdatedEvent:
    """Webhook body of the event user.family_member.updated (OpenAPI x-webhooks/user.family_member.updated)."""

    SCHEMA: ClassVar[str] = "x-webhooks/user.family_member.updated"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "occurred_at": "occurred_at",
        "data": "data",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "open_user_id", "channel_user_id", "occurred_at", "data"]

    event: str
    delivery_id: str
    app_id: int
    open_user_id: int
    channel_user_id: str
    occurred_at: str
    data: FamilyMemberUpdatedData

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserFamilyMemberUpdatedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            occurred_at=_v(d, "occurred_at"),
            data=_obj(FamilyMemberUpdatedData, d.get("data")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["occurred_at"] = _out(self.occurred_at)
        out["data"] = _out(self.data)
        return out


@dataclass
class FamilyMemberUpdatedData:
    """`data` of user.family_member.updated: the member after the change and which fields changed (at least one) (OpenAPI FamilyMemberUpdatedData)."""

    SCHEMA: ClassVar[str] = "FamilyMemberUpdatedData"
    WIRE: ClassVar[Dict[str, str]] = {
        "member_id": "member_id",
        "app_user_id": "app_user_id",
        "family_group_id": "family_group_id",
        "app_group_id": "app_group_id",
        "changed_fields": "changed_fields",
    }
    REQUIRED: ClassVar[List[str]] = ["member_id", "app_user_id", "family_group_id", "app_group_id", "changed_fields"]

    member_id: int
    app_user_id: str
    family_group_id: int
    app_group_id: int
    changed_fields: List[str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyMemberUpdatedData:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            member_id=_v(d, "member_id"),
            app_user_id=_v(d, "app_user_id"),
            family_group_id=_v(d, "family_group_id"),
            app_group_id=_v(d, "app_group_id"),
            changed_fields=_v(d, "changed_fields"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["member_id"] = _out(self.member_id)
        out["app_user_id"] = _out(self.app_user_id)
        out["family_group_id"] = _out(self.family_group_id)
        out["app_group_id"] = _out(self.app_group_id)
        out["changed_fields"] = _out(self.changed_fields)
        return out


@dataclass
class UserFamilyMemberDeletedEvent:
    """Webhook body of the event user.family_member.deleted (OpenAPI x-webhooks/user.family_member.deleted)."""

    SCHEMA: ClassVar[str] = "x-webhooks/user.family_member.deleted"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "occurred_at": "occurred_at",
        "data": "data",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "open_user_id", "channel_user_id", "occurred_at", "data"]

    event: str
    delivery_id: str
    app_id: int
    open_user_id: int
    channel_user_id: str
    occurred_at: str
    data: FamilyMemberDeletedData

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserFamilyMemberDeletedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            occurred_at=_v(d, "occurred_at"),
            data=_obj(FamilyMemberDeletedData, d.get("data")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["occurred_at"] = _out(self.occurred_at)
        out["data"] = _out(self.data)
        return out


@dataclass
class FamilyMemberDeletedData:
    """`data` of user.family_member.deleted (a member deleted on its own, not with its group) (OpenAPI FamilyMemberDeletedData)."""

    SCHEMA: ClassVar[str] = "FamilyMemberDeletedData"
    WIRE: ClassVar[Dict[str, str]] = {
        "member_id": "member_id",
        "app_user_id": "app_user_id",
        "family_group_id": "family_group_id",
    }
    REQUIRED: ClassVar[List[str]] = ["member_id", "app_user_id", "family_group_id"]

    member_id: int
    app_user_id: str
    family_group_id: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FamilyMemberDeletedData:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            member_id=_v(d, "member_id"),
            app_user_id=_v(d, "app_user_id"),
            family_group_id=_v(d, "family_group_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["member_id"] = _out(self.member_id)
        out["app_user_id"] = _out(self.app_user_id)
        out["family_group_id"] = _out(self.family_group_id)
        return out


@dataclass
class HealthReportCreatedEvent:
    """Webhook body of the event health.report.created (OpenAPI x-webhooks/health.report.created)."""

    SCHEMA: ClassVar[str] = "x-webhooks/health.report.created"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "open_report_id": "open_report_id",
        "report_type": "report_type",
        "occurred_at": "occurred_at",
        "delivery_id": "delivery_id",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "open_user_id", "channel_user_id", "open_report_id", "report_type", "occurred_at", "delivery_id"]

    event: str
    open_user_id: int
    channel_user_id: str
    open_report_id: int
    report_type: Optional[str]
    occurred_at: str
    delivery_id: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HealthReportCreatedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            open_report_id=_v(d, "open_report_id"),
            report_type=_v(d, "report_type"),
            occurred_at=_v(d, "occurred_at"),
            delivery_id=_v(d, "delivery_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["open_report_id"] = _out(self.open_report_id)
        out["report_type"] = _out(self.report_type)
        out["occurred_at"] = _out(self.occurred_at)
        out["delivery_id"] = _out(self.delivery_id)
        return out


@dataclass
class HealthReportUpdatedEvent:
    """Webhook body of the event health.report.updated (OpenAPI x-webhooks/health.report.updated)."""

    SCHEMA: ClassVar[str] = "x-webhooks/health.report.updated"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "open_user_id": "open_user_id",
        "channel_user_id": "channel_user_id",
        "open_report_id": "open_report_id",
        "report_type": "report_type",
        "occurred_at": "occurred_at",
        "delivery_id": "delivery_id",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "open_user_id", "channel_user_id", "open_report_id", "report_type", "occurred_at", "delivery_id"]

    event: str
    open_user_id: int
    channel_user_id: str
    open_report_id: int
    report_type: Optional[str]
    occurred_at: str
    delivery_id: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HealthReportUpdatedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            open_user_id=_v(d, "open_user_id"),
            channel_user_id=_v(d, "channel_user_id"),
            open_report_id=_v(d, "open_report_id"),
            report_type=_v(d, "report_type"),
            occurred_at=_v(d, "occurred_at"),
            delivery_id=_v(d, "delivery_id"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["open_user_id"] = _out(self.open_user_id)
        out["channel_user_id"] = _out(self.channel_user_id)
        out["open_report_id"] = _out(self.open_report_id)
        out["report_type"] = _out(self.report_type)
        out["occurred_at"] = _out(self.occurred_at)
        out["delivery_id"] = _out(self.delivery_id)
        return out


@dataclass
class PluginReportReadyEvent:
    """Webhook body of the event plugin.report.ready (OpenAPI x-webhooks/plugin.report.ready)."""

    SCHEMA: ClassVar[str] = "x-webhooks/plugin.report.ready"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "measurement_no": "measurement_no",
        "third_user_id": "third_user_id",
        "platform_user_id": "platform_user_id",
        "report_type": "report_type",
        "report_url": "report_url",
        "metadata": "metadata",
        "occurred_at": "occurred_at",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "measurement_no", "third_user_id", "platform_user_id", "report_type", "report_url", "metadata", "occurred_at"]

    event: str
    delivery_id: str
    app_id: int
    measurement_no: str
    third_user_id: Optional[str]
    platform_user_id: Optional[int]
    report_type: str
    report_url: Optional[str]
    metadata: Optional[str]
    occurred_at: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PluginReportReadyEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            measurement_no=_v(d, "measurement_no"),
            third_user_id=_v(d, "third_user_id"),
            platform_user_id=_v(d, "platform_user_id"),
            report_type=_v(d, "report_type"),
            report_url=_v(d, "report_url"),
            metadata=_v(d, "metadata"),
            occurred_at=_v(d, "occurred_at"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["measurement_no"] = _out(self.measurement_no)
        out["third_user_id"] = _out(self.third_user_id)
        out["platform_user_id"] = _out(self.platform_user_id)
        out["report_type"] = _out(self.report_type)
        out["report_url"] = _out(self.report_url)
        out["metadata"] = _out(self.metadata)
        out["occurred_at"] = _out(self.occurred_at)
        return out


@dataclass
class OrderShippedEvent:
    """Webhook body of the event order.shipped (OpenAPI x-webhooks/order.shipped)."""

    SCHEMA: ClassVar[str] = "x-webhooks/order.shipped"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "order_code": "order_code",
        "third_order_id": "third_order_id",
        "logistics_company": "logistics_company",
        "tracking_number": "tracking_number",
        "shipped_at": "shipped_at",
        "complete": "complete",
        "items": "items",
        "occurred_at": "occurred_at",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "order_code", "third_order_id", "logistics_company", "tracking_number", "shipped_at", "complete", "items", "occurred_at"]

    event: str
    delivery_id: str
    app_id: int
    order_code: str
    third_order_id: str
    logistics_company: str
    tracking_number: str
    shipped_at: str
    complete: bool
    items: List[OrderShippedEventItemsItem]
    occurred_at: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OrderShippedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            order_code=_v(d, "order_code"),
            third_order_id=_v(d, "third_order_id"),
            logistics_company=_v(d, "logistics_company"),
            tracking_number=_v(d, "tracking_number"),
            shipped_at=_v(d, "shipped_at"),
            complete=_v(d, "complete"),
            items=_objs(OrderShippedEventItemsItem, d.get("items")),
            occurred_at=_v(d, "occurred_at"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["order_code"] = _out(self.order_code)
        out["third_order_id"] = _out(self.third_order_id)
        out["logistics_company"] = _out(self.logistics_company)
        out["tracking_number"] = _out(self.tracking_number)
        out["shipped_at"] = _out(self.shipped_at)
        out["complete"] = _out(self.complete)
        out["items"] = _out(self.items)
        out["occurred_at"] = _out(self.occurred_at)
        return out


@dataclass
class OrderShippedEventItemsItem:
    """Webhook body of the event order.shipped.items[] (OpenAPI x-webhooks/order.shipped.items[])."""

    SCHEMA: ClassVar[str] = "x-webhooks/order.shipped.items[]"
    WIRE: ClassVar[Dict[str, str]] = {
        "item_id": "item_id",
        "goods_code": "goods_code",
        "quantity": "quantity",
        "device_sns": "device_sns",
    }
    REQUIRED: ClassVar[List[str]] = ["item_id", "goods_code", "quantity", "device_sns"]

    item_id: int
    goods_code: str
    quantity: int
    device_sns: List[str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OrderShippedEventItemsItem:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            item_id=_v(d, "item_id"),
            goods_code=_v(d, "goods_code"),
            quantity=_v(d, "quantity"),
            device_sns=_v(d, "device_sns"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["item_id"] = _out(self.item_id)
        out["goods_code"] = _out(self.goods_code)
        out["quantity"] = _out(self.quantity)
        out["device_sns"] = _out(self.device_sns)
        return out


@dataclass
class WebhookTestEvent:
    """Webhook body of the event webhook.test (OpenAPI x-webhooks/webhook.test)."""

    SCHEMA: ClassVar[str] = "x-webhooks/webhook.test"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "endpoint_id": "endpoint_id",
        "occurred_at": "occurred_at",
        "data": "data",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "endpoint_id", "occurred_at", "data"]

    event: str
    delivery_id: str
    app_id: int
    endpoint_id: int
    occurred_at: str
    data: WebhookTestEventData

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookTestEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            endpoint_id=_v(d, "endpoint_id"),
            occurred_at=_v(d, "occurred_at"),
            data=_obj(WebhookTestEventData, d.get("data")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["endpoint_id"] = _out(self.endpoint_id)
        out["occurred_at"] = _out(self.occurred_at)
        out["data"] = _out(self.data)
        return out


@dataclass
class WebhookTestEventData:
    """Webhook body of the event webhook.test.data (OpenAPI x-webhooks/webhook.test.data)."""

    SCHEMA: ClassVar[str] = "x-webhooks/webhook.test.data"
    WIRE: ClassVar[Dict[str, str]] = {
        "message": "message",
    }
    REQUIRED: ClassVar[List[str]] = ["message"]

    message: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WebhookTestEventData:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            message=_v(d, "message"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["message"] = _out(self.message)
        return out


@dataclass
class UserErasedEvent:
    """Webhook body of the event user.erased (OpenAPI x-webhooks/user.erased)."""

    SCHEMA: ClassVar[str] = "x-webhooks/user.erased"
    WIRE: ClassVar[Dict[str, str]] = {
        "event": "event",
        "delivery_id": "delivery_id",
        "app_id": "app_id",
        "open_user_id": "open_user_id",
        "occurred_at": "occurred_at",
        "data": "data",
    }
    REQUIRED: ClassVar[List[str]] = ["event", "delivery_id", "app_id", "open_user_id", "occurred_at", "data"]

    event: str
    delivery_id: str
    app_id: int
    open_user_id: int
    occurred_at: str
    data: UserErasedEventData

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserErasedEvent:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            event=_v(d, "event"),
            delivery_id=_v(d, "delivery_id"),
            app_id=_v(d, "app_id"),
            open_user_id=_v(d, "open_user_id"),
            occurred_at=_v(d, "occurred_at"),
            data=_obj(UserErasedEventData, d.get("data")),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["event"] = _out(self.event)
        out["delivery_id"] = _out(self.delivery_id)
        out["app_id"] = _out(self.app_id)
        out["open_user_id"] = _out(self.open_user_id)
        out["occurred_at"] = _out(self.occurred_at)
        out["data"] = _out(self.data)
        return out


@dataclass
class UserErasedEventData:
    """Webhook body of the event user.erased.data (OpenAPI x-webhooks/user.erased.data)."""

    SCHEMA: ClassVar[str] = "x-webhooks/user.erased.data"
    WIRE: ClassVar[Dict[str, str]] = {
        "erased_at": "erased_at",
        "acknowledge_path": "acknowledge_path",
    }
    REQUIRED: ClassVar[List[str]] = ["erased_at", "acknowledge_path"]

    erased_at: str
    acknowledge_path: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UserErasedEventData:
        """Parse the JSON object; unknown keys are ignored."""
        return cls(
            erased_at=_v(d, "erased_at"),
            acknowledge_path=_v(d, "acknowledge_path"),
        )

    def to_dict(self) -> Dict[str, Any]:
        """JSON object: required fields always, optional ones when not None."""
        out: Dict[str, Any] = {}
        out["erased_at"] = _out(self.erased_at)
        out["acknowledge_path"] = _out(self.acknowledge_path)
        return out


EVENT_TYPES: Dict[str, Type[Any]] = {
    "user.profile.updated": UserProfileUpdatedEvent,
    "user.family_group.created": UserFamilyGroupCreatedEvent,
    "user.family_group.deleted": UserFamilyGroupDeletedEvent,
    "user.family_member.created": UserFamilyMemberCreatedEvent,
    "user.family_member.updated": UserFamilyMemberUpdatedEvent,
    "user.family_member.deleted": UserFamilyMemberDeletedEvent,
    "health.report.created": HealthReportCreatedEvent,
    "health.report.updated": HealthReportUpdatedEvent,
    "plugin.report.ready": PluginReportReadyEvent,
    "order.shipped": OrderShippedEvent,
    "webhook.test": WebhookTestEvent,
    "user.erased": UserErasedEvent,
}
"""Webhook event type (X-Webhook-Event, body field event) to its model."""

PARTNER_OPERATIONS: Dict[str, List[str]] = {
    "registerChannelUser": ["POST", "/open/v1/channel/users"],
    "getChannelUserSnapshot": ["GET", "/open/v1/channel/users/{openUserId}"],
    "updateChannelUser": ["PATCH", "/open/v1/channel/users/{openUserId}"],
    "upsertFamilyGroup": ["POST", "/open/v1/channel/users/{openUserId}/family-groups"],
    "dissolveFamilyGroup": ["DELETE", "/open/v1/channel/users/{openUserId}/family-groups/{groupId}"],
    "upsertFamilyMember": ["POST", "/open/v1/channel/users/{openUserId}/family-members"],
    "deleteFamilyMember": ["DELETE", "/open/v1/channel/users/{openUserId}/family-members/{memberId}"],
    "listMyDeliveries": ["GET", "/open/v1/webhooks/deliveries"],
    "getMyDelivery": ["GET", "/open/v1/webhooks/deliveries/{deliveryId}"],
    "resendMyDelivery": ["POST", "/open/v1/webhooks/deliveries/{deliveryId}/resend"],
    "listMyWebhookEndpoints": ["GET", "/open/v1/webhooks/endpoints"],
    "createMyWebhookEndpoint": ["POST", "/open/v1/webhooks/endpoints"],
    "getMyWebhookEndpoint": ["GET", "/open/v1/webhooks/endpoints/{endpointId}"],
    "updateMyWebhookEndpoint": ["PATCH", "/open/v1/webhooks/endpoints/{endpointId}"],
    "deleteMyWebhookEndpoint": ["DELETE", "/open/v1/webhooks/endpoints/{endpointId}"],
    "rotateMyWebhookEndpointSecret": ["POST", "/open/v1/webhooks/endpoints/{endpointId}/secret/rotate"],
    "activateMyWebhookEndpointSecret": ["POST", "/open/v1/webhooks/endpoints/{endpointId}/secret/activate"],
    "sendMyWebhookEndpointTest": ["POST", "/open/v1/webhooks/endpoints/{endpointId}/test"],
    "requestWebhookReplay": ["POST", "/open/v1/webhooks/replays"],
    "getWebhookReplay": ["GET", "/open/v1/webhooks/replays/{replayId}"],
    "cancelWebhookReplay": ["POST", "/open/v1/webhooks/replays/{replayId}/cancel"],
    "rotateMyWebhookSecret": ["POST", "/open/v1/webhooks/secret/rotate"],
    "activateMyWebhookSecret": ["POST", "/open/v1/webhooks/secret/activate"],
    "webhookEventFeed": ["GET", "/open/v1/webhooks/events"],
    "acknowledgeErasure": ["POST", "/open/v1/erasures/{openUserId}/acknowledge"],
    "listMyAccessLog": ["GET", "/open/v1/access-log"],
    "pullHealthReport": ["GET", "/open/v1/health-reports/{openReportId}"],
    "getDailyReport": ["GET", "/v1/health/daily-report"],
    "sandboxMockMeasure": ["POST", "/sandbox/mock/measure"],
    "oauthToken": ["POST", "/oauth/token"],
    "oauthRevoke": ["POST", "/oauth/revoke"],
    "createOrder": ["POST", "/open/v1/order/create"],
    "getOrderDetail": ["GET", "/open/v1/order/detail"],
    "sandboxShippedCallbackTest": ["POST", "/open/v1/order/shipped-callback-test"],
    "triggerSandboxEvent": ["POST", "/open/v1/webhooks/sandbox-events"],
    "registerOwnServiceProvider": ["POST", "/open/v1/service-providers"],
    "batchIssueBenefitCards": ["POST", "/open/v1/benefit-cards/batch-issue"],
    "verifyBenefitUse": ["POST", "/open/v1/benefit-cards/verify-use"],
    "getBenefitCard": ["GET", "/open/v1/benefit-cards/detail"],
    "listFulfillments": ["GET", "/open/v1/benefit-cards/fulfillments"],
    "rateFulfillment": ["POST", "/open/v1/benefit-cards/fulfillments/{recordId}/rating"],
}
"""operationId to [METHOD, path] of every partner operation in the OpenAPI document."""
