//! Who owns an entry, and who is asking to change it (docs/design.md, "Trust boundaries").
//!
//! An entry registered by CloudFormation is owned by the stack resource that created it (StackId
//! and LogicalResourceId); one registered through `gatewayctl` (or a direct invoke in the gateway
//! account) is owned by the operators. Only the owner changes or removes it; operators hand an
//! entry to another owner with `gatewayctl adopt`.
//!
//! The owner is stored on the entry row as one string attribute (`owner`), so a registration's
//! condition can require it unchanged since it was read: `stack:<StackId>#<LogicalResourceId>`,
//! `stack:<StackId>` (adopted without a resource: any resource of that stack, bound on its next
//! write), or `operator:<principal>`.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Stack {
        stack_id: String,
        logical_id: Option<String>,
    },
    /// Operators act as one owner; the principal records who wrote last.
    Operator { principal: String },
}

impl Owner {
    pub fn stack(stack_id: impl Into<String>, logical_id: impl Into<String>) -> Owner {
        Owner::Stack {
            stack_id: stack_id.into(),
            logical_id: Some(logical_id.into()),
        }
    }

    pub fn operator(principal: impl Into<String>) -> Owner {
        Owner::Operator {
            principal: principal.into(),
        }
    }

    /// The stored form (see the module documentation).
    pub fn encode(&self) -> String {
        match self {
            Owner::Stack {
                stack_id,
                logical_id: Some(l),
            } => format!("stack:{stack_id}#{l}"),
            Owner::Stack {
                stack_id,
                logical_id: None,
            } => format!("stack:{stack_id}"),
            Owner::Operator { principal } => format!("operator:{principal}"),
        }
    }

    /// The stored form read back; `None` for anything else (the caller reports the row).
    pub fn decode(stored: &str) -> Option<Owner> {
        if let Some(rest) = stored.strip_prefix("stack:") {
            let (stack_id, logical_id) = match rest.split_once('#') {
                Some((s, l)) => (s, Some(l.to_string())),
                None => (rest, None),
            };
            if stack_id.is_empty() {
                return None;
            }
            return Some(Owner::Stack {
                stack_id: stack_id.to_string(),
                logical_id,
            });
        }
        stored
            .strip_prefix("operator:")
            .map(|p| Owner::operator(p.to_string()))
    }

    /// Whether `actor` may change or remove an entry this owns.
    pub fn admits(&self, actor: &Owner) -> bool {
        match (self, actor) {
            (Owner::Operator { .. }, Owner::Operator { .. }) => true,
            (
                Owner::Stack {
                    stack_id,
                    logical_id,
                },
                Owner::Stack {
                    stack_id: theirs,
                    logical_id: their_resource,
                },
            ) => {
                stack_id == theirs
                    && match logical_id {
                        None => true,
                        Some(mine) => their_resource.as_deref() == Some(mine.as_str()),
                    }
            }
            _ => false,
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Stack {
                stack_id,
                logical_id: Some(l),
            } => write!(f, "stack {stack_id} (resource {l})"),
            Owner::Stack {
                stack_id,
                logical_id: None,
            } => write!(f, "stack {stack_id} (any resource)"),
            Owner::Operator { principal } => write!(f, "operators (last written by {principal})"),
        }
    }
}

/// Who is asking for a registration change: the owner it writes as, and the AWS account whose
/// grant for the entry's team the transaction must find (`None` for operators, who need none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub owner: Owner,
    pub granted_account: Option<String>,
}

impl Actor {
    pub fn operator(principal: impl Into<String>) -> Actor {
        Actor {
            owner: Owner::operator(principal),
            granted_account: None,
        }
    }

    /// A CloudFormation stack resource acting from `account`.
    pub fn stack(
        account: impl Into<String>,
        stack_id: impl Into<String>,
        logical_id: impl Into<String>,
    ) -> Actor {
        Actor {
            owner: Owner::stack(stack_id, logical_id),
            granted_account: Some(account.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STACK: &str = "arn:aws:cloudformation:us-east-1:222222222222:stack/a/1";

    #[test]
    fn the_stored_form_round_trips() {
        for owner in [
            Owner::stack(STACK, "Expose"),
            Owner::Stack {
                stack_id: STACK.into(),
                logical_id: None,
            },
            Owner::operator("arn:aws:iam::111111111111:user/ops#1"),
        ] {
            assert_eq!(Owner::decode(&owner.encode()), Some(owner));
        }
        assert_eq!(Owner::decode("someone"), None);
        assert_eq!(Owner::decode("stack:"), None);
    }

    #[test]
    fn only_the_owning_resource_or_operators_for_operators_are_admitted() {
        let owner = Owner::stack(STACK, "Expose");
        assert!(owner.admits(&Owner::stack(STACK, "Expose")));
        assert!(!owner.admits(&Owner::stack(STACK, "Other")));
        assert!(!owner.admits(&Owner::stack(
            "arn:aws:cloudformation:us-east-1:222222222222:stack/b/2",
            "Expose"
        )));
        assert!(!owner.admits(&Owner::operator("ops")));
        let adopted = Owner::Stack {
            stack_id: STACK.into(),
            logical_id: None,
        };
        assert!(adopted.admits(&Owner::stack(STACK, "Anything")));
        let ops = Owner::operator("alice");
        assert!(ops.admits(&Owner::operator("bob")));
        assert!(!ops.admits(&Owner::stack(STACK, "Expose")));
    }
}
