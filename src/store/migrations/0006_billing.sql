CREATE TABLE `local_charges` (
	`idempotency_key` text PRIMARY KEY NOT NULL,
	`payment_ref` text NOT NULL,
	`amount_cents` integer NOT NULL,
	`payment_method_id` text NOT NULL,
	`result` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `processor_events` (
	`id` text PRIMARY KEY NOT NULL,
	`processor` text NOT NULL,
	`type` text NOT NULL,
	`received_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `accounts` ADD `processor_customer_ref` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `kind` text DEFAULT 'purchase' NOT NULL;--> statement-breakpoint
ALTER TABLE `payments` ADD `description` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `payments` ADD `idempotency_key` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `period_start` integer;--> statement-breakpoint
ALTER TABLE `payments` ADD `period_end` integer;--> statement-breakpoint
ALTER TABLE `payments` ADD `failure_code` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `failure_message` text;--> statement-breakpoint
CREATE UNIQUE INDEX `payments_idempotency` ON `payments` (`idempotency_key`) WHERE idempotency_key IS NOT NULL;--> statement-breakpoint
CREATE INDEX `payments_subscription` ON `payments` (`subscription_id`,`status`);--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `current_period_start` integer;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `cancel_at_period_end` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `next_charge_at` integer;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `failed_charges` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `unpaid_since` integer;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `last_charge_error` text;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `credit_cents` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `subscriptions_due` ON `subscriptions` (`next_charge_at`);--> statement-breakpoint
UPDATE `subscriptions` SET `next_charge_at` = `current_period_end`, `current_period_start` = `created_at` WHERE `status` IN ('active', 'past_due');