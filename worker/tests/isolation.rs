//! Four different scripts run concurrently on four PHP threads, many times: every output
//! byte must equal what the same script printed when it ran alone.

mod common;

use common::{run, submit};

const SCRIPTS: [&str; 4] = [
    "iso_globals.php",
    "iso_output.php",
    "iso_ini.php",
    "iso_classes.php",
];
const TAGS: [&str; 4] = ["alpha", "bravo-charlie", "d", "echo-foxtrot-golf"];

#[test]
fn concurrent_scripts_never_see_each_others_state() {
    // Reference outputs, one script at a time.
    let mut expected = Vec::new();
    for (script, tag) in SCRIPTS.iter().zip(TAGS) {
        let (outcome, body) = run(script, &[tag]);
        assert_eq!(
            outcome.exit_status,
            0,
            "{script} failed alone: {}",
            String::from_utf8_lossy(&body)
        );
        assert!(body.len() > 1000, "{script} printed too little");
        expected.push(body);
    }
    for round in 0..50 {
        // Rotate tags so each script also sees every other tag's lengths over the rounds,
        // and keep four runs in flight at once.
        let pending: Vec<_> = (0..SCRIPTS.len())
            .map(|i| (i, submit(SCRIPTS[i], &[TAGS[i]])))
            .collect();
        for (i, wait) in pending {
            let (outcome, body) = wait();
            assert_eq!(
                outcome.exit_status, 0,
                "round {round}: {} failed",
                SCRIPTS[i]
            );
            if body != expected[i] {
                let at = body
                    .iter()
                    .zip(&expected[i])
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                panic!(
                    "round {round}: {} output differs at byte {at} (len {} vs {}): {:?}",
                    SCRIPTS[i],
                    body.len(),
                    expected[i].len(),
                    String::from_utf8_lossy(
                        &body[at.saturating_sub(40)..(at + 40).min(body.len())]
                    )
                );
            }
        }
    }
}
