CREATE TABLE `checkout_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`secret_hash` text NOT NULL,
	`sku` text NOT NULL,
	`plan_slug` text NOT NULL,
	`billing_period` text NOT NULL,
	`status` text NOT NULL,
	`buyer_email` text,
	`requested_slug` text,
	`amount_cents` integer NOT NULL,
	`currency` text NOT NULL,
	`account_id` text,
	`anonymous` integer NOT NULL,
	`api_key_state` text DEFAULT 'none' NOT NULL,
	`payment_method` text,
	`processor_session_ref` text,
	`processor_checkout_url` text,
	`site_id` text,
	`subscription_id` text,
	`error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`completed_at` integer,
	FOREIGN KEY (`plan_slug`) REFERENCES `plans`(`slug`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `checkout_sessions_slug` ON `checkout_sessions` (`requested_slug`,`status`);--> statement-breakpoint
CREATE UNIQUE INDEX `checkout_sessions_processor_ref` ON `checkout_sessions` (`processor_session_ref`);--> statement-breakpoint
CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`subject_id` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`error` text,
	`run_after` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `jobs_pending` ON `jobs` (`status`,`run_after`);--> statement-breakpoint
CREATE TABLE `payments` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`checkout_id` text,
	`subscription_id` text,
	`amount_cents` integer NOT NULL,
	`currency` text NOT NULL,
	`status` text NOT NULL,
	`processor` text NOT NULL,
	`processor_ref` text NOT NULL,
	`method_label` text NOT NULL,
	`test_mode` integer NOT NULL,
	`created_at` integer NOT NULL,
	`refunded_at` integer,
	`refund_ref` text,
	`refund_reason` text,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `payments_account` ON `payments` (`account_id`);--> statement-breakpoint
ALTER TABLE `sites` ADD `error` text;--> statement-breakpoint
ALTER TABLE `sites` ADD `deletion_scheduled_for` integer;--> statement-breakpoint
ALTER TABLE `sites` ADD `modules` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `amount_cents` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `processor` text DEFAULT 'local' NOT NULL;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `processor_ref` text;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `ended_at` integer;