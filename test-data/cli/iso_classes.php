<?php
// Every thread declares the same class and function names with its own bodies via eval:
// compiled code and class tables are per thread.
$tag = $argv[1];
eval('final class Greeter { const TAG = ' . var_export($tag, true) . ';
    public function __construct(public string $who) {}
    public function greet(): string { return self::TAG . " greets " . $this->who; } }
    function helper(int $i): string { return ' . var_export($tag, true) . ' . "#" . $i; }');
$lines = [];
for ($i = 0; $i < 300; $i++) {
    $lines[] = (new Greeter("n$i"))->greet() . ' ' . helper($i);
}
echo implode("\n", $lines), "\n", count(get_declared_classes()) > 0 ? "ok" : "no", "\n";
