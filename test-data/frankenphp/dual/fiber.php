<?php
// Fibers inside a handler (TestFiberBasic, TestFiberNoCgo): ?suspend=1 suspends and resumes.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    $text = 'Fiber ' . ($_GET['i'] ?? '');
    if ($_GET['suspend'] ?? false) {
        $fiber = new Fiber(static function () use ($text): void {
            Fiber::suspend($text);
        });
        echo $fiber->start();
        $fiber->resume();
    } else {
        $fiber = new Fiber(static function () use ($text): void {
            echo $text;
        });
        $fiber->start();
    }
});
