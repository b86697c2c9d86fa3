<?php
// A background worker: takes jobs from `work` until told to stop and appends one line
// per handling to $JOBS_OUT: "op id attempts n handled_at dispatched_at pid", and
// "acked id" once an ack returned.
$out = getenv('JOBS_OUT');
$log = function (string $line) use ($out) {
    file_put_contents($out, $line . "\n", FILE_APPEND | LOCK_EX);
};
$log('start ' . getmypid() . ' ' . __DIR__);
$log('max_execution_time ' . ini_get('max_execution_time'));
while (!Ferrophp\Background::shouldStop()) {
    $job = Ferrophp\Jobs::take(['work'], 30);
    if ($job === null) {
        continue;
    }
    $p = $job->payload;
    $line = sprintf('%s %s %d %d %.6f %.6f %d', $p['op'], $job->id, $job->attempts, $p['n'], microtime(true), $p['at'], getmypid());
    switch ($p['op']) {
        case 'record':
            $log($line);
            $job->ack();
            $log('acked ' . $job->id);
            break;
        case 'work':
            // 2 ms of work: a backlog builds under load, so kills find jobs waiting.
            usleep(2000);
            $log($line);
            $job->ack();
            $log('acked ' . $job->id);
            break;
        case 'fail':
            $log($line);
            $job->fail('boom ' . $job->attempts);
            break;
        case 'fatal':
            $log($line);
            undefined_function_in_a_job();
            break;
        case 'slow':
            usleep(300000);
            $log($line);
            $job->ack();
            break;
    }
}
$log('stopped');
