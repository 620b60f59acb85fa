//! Who is calling, per entry point (docs/design.md, "Trust boundaries").
//!
//! * Through SNS: one registration topic per team account, named `…-register-<account id>`,
//!   whose policy lets only that account publish. The topic a record came through is therefore
//!   the caller's account; the message's own claims are not.
//! * Anything else is a direct invoke, which only principals of the gateway's own account can
//!   make (no cross-account invoke permission exists): the caller is the gateway account.
//!
//! Either way a CloudFormation event's StackId must be a stack of the caller's account.

/// The 12 digits an ARN's account field holds, if it holds them.
fn arn_account(arn: &str) -> Option<&str> {
    let account = arn.split(':').nth(4)?;
    gateway_adapters::registry::is_account_id(account).then_some(account)
}

/// The caller's account from an SNS record's `TopicArn`: the topic name's trailing 12 digits,
/// after a `-` (`…-register-222222222222`). The topic's own account is not checked: SNS can only
/// invoke the function from topics it is subscribed to, which the gateway stack creates in its
/// own account, one per team account.
pub fn account_from_topic(topic_arn: &str) -> Result<String, String> {
    let parts: Vec<&str> = topic_arn.split(':').collect();
    if parts.len() != 6 || parts[0] != "arn" || parts[2] != "sns" {
        return Err(format!("TopicArn {topic_arn:?} is not an SNS topic ARN"));
    }
    let account = parts[5]
        .rsplit_once('-')
        .map(|(_, tail)| tail)
        .filter(|tail| gateway_adapters::registry::is_account_id(tail))
        .ok_or_else(|| {
            format!(
                "TopicArn {topic_arn}: the topic's name does not end with -<account id> (e.g. gateway-register-222222222222), so it names no caller"
            )
        })?;
    Ok(account.to_string())
}

/// Refuses a StackId that is not a CloudFormation stack of `account`.
pub fn check_stack_account(stack_id: &str, account: &str) -> Result<(), String> {
    let is_stack = stack_id.split(':').nth(2) == Some("cloudformation");
    match arn_account(stack_id) {
        Some(theirs) if is_stack && theirs == account => Ok(()),
        Some(theirs) if is_stack => Err(format!(
            "StackId {stack_id} is a stack of account {theirs}, but the request came from account {account}"
        )),
        _ => Err(format!("StackId {stack_id:?} is not a CloudFormation stack ARN")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_topic_names_the_caller() {
        assert_eq!(
            account_from_topic("arn:aws:sns:us-east-1:111111111111:gateway-register-222222222222"),
            Ok("222222222222".to_string())
        );
        for bad in [
            "arn:aws:sns:us-east-1:111111111111:gateway-registrations",
            "arn:aws:sns:us-east-1:111111111111:gateway-register-22222222222",
            "arn:aws:sns:us-east-1:111111111111:gateway-register-2222222222222",
            "arn:aws:sns:us-east-1:111111111111:gateway-register222222222222",
            "arn:aws:sqs:us-east-1:111111111111:gateway-register-222222222222",
            "gateway-register-222222222222",
        ] {
            assert!(account_from_topic(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_stack_of_another_account_is_refused() {
        let stack = "arn:aws:cloudformation:us-east-1:222222222222:stack/s/1";
        assert_eq!(check_stack_account(stack, "222222222222"), Ok(()));
        let err = check_stack_account(stack, "111111111111").expect_err("other account");
        assert!(err.contains("stack of account 222222222222"), "{err}");
        assert!(
            check_stack_account("arn:aws:sns:us-east-1:222222222222:t", "222222222222").is_err()
        );
        assert!(check_stack_account("not-an-arn", "222222222222").is_err());
    }
}
